"""`audit review`: a web app over the store to read audits, check the judge and label findings.

Server-rendered HTML (FastAPI + Jinja2, autoescaped, no JavaScript build). Modules:
`app` routes, `security` token/CSRF/headers, `queries` the runs list in SQL, `views`
events into view models, `highlight` quotes located in message text, `labels` the
append-only review table and its export, `agreement` judge versus reviewers,
`standalone` one self-contained HTML transcript (`audit show --html`), `server` uvicorn.
"""
