"""The run's coordinator for volunteer workers: its app (run side) and the wire protocol both sides speak.

protocol.py  join / heartbeat / assign messages, ids bound to keys, answers signed with the run key
app.py       the routes; assign.py: batches assigned (examples + noise key); grants.py: uploads by grant
announce.py  the version workers are told to fetch, kept fresh off the request path; limits.py: rate limits
"""
