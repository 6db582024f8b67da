"""The server's work behind the requests: the running parts every endpoint reaches
(`context`), persistent background tasks (`tasks`) and the post-hoc scoring of stored
traces (`scoring`) with the evaluation rules (`rules/`), session judgements (`sessions/`)
and the daily judge budgets (`budget`); supervised loops (`supervise`), what `/ready`
reports (`readiness`), the intake's backpressure (`backlog`), scores written back onto
traces (`writeback`), what the store forgets (`retention`) and memory given back to the
system (`heap`).
"""
