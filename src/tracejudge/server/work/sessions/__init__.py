"""Sessions and users: which session and user a trace belongs to (`keys`), a session as
one conversation for the judge (`conversation`) and session-level judgements
(`judging`). The HTTP side is `server.pages.sessions_api`.
"""
