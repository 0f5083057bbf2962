"""The fleet: errord sidecars sharing what they learn through Redis (``fleet_url``).

Each host publishes its own evidence as it is committed (``outbox``): its breakers'
phases, the rate-limit windows its tools asked for, its episodic memory's tallies. Each
host applies the others' to an in-memory view (``view``) that decisions read beside the
projections, never awaiting Redis: a window any host received holds on every host, a tool
whose breaker opened on a quorum of hosts is refused on every host (with one half-open
probe for the fleet, claimed in Redis before it is needed), and memory's tallies add up.
The link (``link``) keeps the view current (pub/sub, and a load of the fleet's state
whenever it connects) and, when Redis cannot be reached, leaves the host deciding alone
until it returns. What crosses Redis is typed and bounded (``records``). ``joining``
builds the three over a host's projections when ``fleet_url`` is set; ``status`` is what
operators are told. docs/fleet.md tells what is shared, what is not, and why.
"""
