"""The JSON routes, one module per resource: the hosted evaluation API (`evals`), stored
traces (`traces`), people's labels (`labels`), attribution (`attribution`), experiment
runs (`runs`), evaluation rules (`rules_api`), trends (`trends`), monitors (`monitors`,
with `alerts`, the loop that checks them), the analysts' export (`export`), and the
operator's `/metrics`, `/health` and `/ready` (`metrics`, `health`). The OpenAPI document
that describes them all is `server/openapi.py`.
"""
