// Drives `pirn serve`'s /agent-webkit routes with the real agent-webkit
// client (@agent-webkit/core) and prints what it saw as one JSON object.
//
//   node drive.mjs PACKAGE_DIR BASE_URL TOKEN
//
// The scenario: create a session (permission_mode "default"), read
// session_ready, send a message, approve the permission request (a second
// answer must be refused with 409), read to the result; re-attach from an
// event in the middle (the client resumes with Last-Event-ID); then close
// the session while a third attachment listens (it must get `done`).
import { pathToFileURL } from "node:url";

const [pkg, base, token] = process.argv.slice(2);
const { createAgentClient, TransportError } = await import(pathToFileURL(`${pkg}/dist/index.js`).href);
const client = createAgentClient({ baseUrl: `${base}/agent-webkit`, token });
const out = {};

const session = await client.createSession({ model: "mock-model", permission_mode: "default" });
out.created = { id: session.id, protocol_version: session.protocolVersion };
const events = session.events()[Symbol.asyncIterator]();
const first = await events.next();
out.first = first.value;
await session.send("write hello.txt");
out.run = [];
for (;;) {
  const { value, done } = await events.next();
  if (done) break;
  out.run.push(value);
  if (value.event === "permission_request") {
    await session.approve(value.data.correlation_id);
    try {
      await session.deny(value.data.correlation_id);
      out.second_answer = "accepted";
    } catch (e) {
      out.second_answer = e instanceof TransportError ? e.status : String(e);
    }
  }
  if (value.event === "result") break;
}
session.detach();

const middle = out.run[1].id;
const again = client.attachSession(session.id, { resumeFromEventId: String(middle) });
out.resumed = [];
for await (const ev of again.events()) {
  out.resumed.push(ev);
  if (ev.event === "result") break;
}
again.detach();

const last = out.run[out.run.length - 1].id;
const listener = client.attachSession(session.id, { resumeFromEventId: String(last) });
const tail = (async () => {
  const seen = [];
  for await (const ev of listener.events()) seen.push(ev);
  return seen;
})();
await new Promise((r) => setTimeout(r, 200));
await session.close();
out.after_close = await tail;
console.log(JSON.stringify(out));
