"""Interop with the tools safety teams already use: Inspect logs and Docent runs out, Petri transcripts in."""
