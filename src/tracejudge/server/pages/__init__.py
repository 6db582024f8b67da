"""The web pages, server-rendered HTML with no build step: the trace list (`list_page`,
with `snippets` for what a search matched), one trace's report (`ui`, with `span_view`),
runs (`run_pages`), rules (`rules_page`), trends (`trends_page`) and sessions
(`sessions_api`, which also answers the session API, as it draws from the same reads);
`plainpage` is the shared frame of the script-free pages.
"""
