"""The read-only web console: the tools' health, the recent turns, and each turn's story.

Off unless ``console_listen`` is set; it needs the ``errord[console]`` extra (aiohttp and
Jinja2), imported only then. It reads what the daemon already has, and never on the
decision path: the projections the health board reads (on the event loop, a page of
tools at a time) and the trace, through a read-only connection of its own, in one
worker thread (errord.state.store.reader). Every page needs the operator token
(errord.ops.console.access) and escapes every value (errord.ops.console.rendering).

    server     the HTTP server, its routes, headers and listener (TCP, TLS, a unix socket)
    access     the token: a bearer header, a session cookie, the login form
    tools      the tools page: breakers, the last hour, alerts, memory's verdicts
    turns      the turns page: filters, paging, the live list
    story      a turn's story: its events in order, on a timeline
    charts     the charts' geometry, drawn as SVG by the templates
    rendering  Jinja2, its filters, and where long texts are cut
"""
