"""SHARDCAST-style weight broadcast: signed, sharded weight versions served by an origin and relays.

manifest.py  the signed manifest of one version (per-shard and whole-version sha256), its keys in a store
publish.py   shard a published `broadcasts/step_N/` directory into a store
server.py    origin and relay HTTP servers (FastAPI), with Range support
client.py    parallel, resumable, verifying download from several servers or a store
serve.py     origin / relay as a process;  fetch.py: the client as a process
watch.py     publish each version the trainer writes (trainer -> store bridge)
"""
