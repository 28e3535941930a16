"""The quirk grammar: organisms generated as behaviour family x situation x parameters.

`families/` and `situations/` hold one YAML file each (targets/grammar/families.py and
situations.py say what they carry); `generate.py` draws quirks from them by seed, with
held-out families and held-out combinations by construction, and writes ordinary quirk
files. Nothing here is for an auditor: tests/test_split_hygiene.py keeps it out of
`auditor/`.
"""
