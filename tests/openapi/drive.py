"""Drives `pirn serve` through a client generated from protocol/openapi.json
by openapi-python-client (tests/suite/openapi.rs runs it).

argv: the directory holding the generated package `pirn_client`, the
daemon's base URL, its token. Creates a session, queues a send, reads the
send's result from the session's history, checks the session's status, and
prints a JSON report on stdout. Every call goes through the generated
functions and models; nothing here builds a URL or a body by hand.
"""

import json
import sys
import time

sys.path.insert(0, sys.argv[1])
base_url, token = sys.argv[2], sys.argv[3]

from pirn_client import AuthenticatedClient, Client  # noqa: E402
from pirn_client.api.daemon import health  # noqa: E402
from pirn_client.api.sessions import (  # noqa: E402
    create_send,
    create_session,
    get_session,
    session_messages,
)
from pirn_client.models import (  # noqa: E402
    CreateSession,
    ErrorBody,
    Health,
    History,
    SendBody,
    SendQueued,
    SessionCreated,
    SessionStatus,
)

report = {}
anonymous = Client(base_url=base_url)
authed = AuthenticatedClient(base_url=base_url, token=token)

up = health.sync(client=anonymous)
assert isinstance(up, Health), up
report["health_ok"] = up.ok

refused = create_session.sync(
    client=anonymous, body=CreateSession(model="mock-model", system_prompt="s", tools=[])
)
assert isinstance(refused, ErrorBody), refused
report["without_token"] = refused.error

created = create_session.sync(
    client=authed,
    body=CreateSession(model="mock-model", system_prompt="You are terse.", tools=["read_file"]),
)
assert isinstance(created, SessionCreated), created
sid = created.session_id
report["protocol_version"] = created.protocol_version

queued = create_send.sync(sid, client=authed, body=SendBody(message="Say hello.", send_id="gen-1"))
assert isinstance(queued, SendQueued), queued
report["send_id"] = queued.send_id

result = None
deadline = time.monotonic() + 30
while result is None and time.monotonic() < deadline:
    history = session_messages.sync(sid, client=authed)
    assert isinstance(history, History), history
    for e in history.events:
        data = e.data
        if e.event == "result" and data.get("id") == queued.send_id:
            result = data
    if result is None:
        time.sleep(0.1)
assert result is not None, "no result within 30 s"
report["status"] = result["status"]
report["response"] = result.get("response")
report["roles"] = [m["role"] for m in history.messages]

status = get_session.sync(sid, client=authed)
assert isinstance(status, SessionStatus), status
report["active"] = status.active
report["messages_count"] = status.messages_count

print(json.dumps(report))
