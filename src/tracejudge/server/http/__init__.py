"""What every route and the middleware stand on: the error answers (`errors`), JSON bodies
with a nesting limit (`jsonbody`), what each route says of itself in the OpenAPI document
(`operation`) and the trace list's query parameters (`list_query`); the middleware's parts
(API keys in `auth`, body size and request rate in `limits` with `buckets`, the Host and
Origin checks in `guard`, connection hygiene in `connections`); the worker threads that
keep requests off the event loop (`offload`) and the cache of trace pages drawn before
(`page_cache`). Nothing here imports the routes: `server/app.py` puts them together.
"""
