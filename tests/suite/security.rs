//! The attacks of issue 23 against the real binary: a web page driving
//! `pirn serve` (cross-origin simple requests, foreign Origin and Host,
//! WebSocket and `/mcp` included), a repository whose symlinks lead out of
//! the workspace, bash escaping its sandbox, and secrets in a child's
//! environment.

use serde_json::{Value, json};

use super::http::{call, client, daemon, daemon_with_env, new_session, post};
use super::mock::MockServer;
use super::tools::call_tool;
use super::worker::mock_worker;

/// The body a page would send: a session whose MCP server is a command.
fn evil_config(marker: &std::path::Path) -> Value {
    json!({
        "model": "m", "system_prompt": "", "tools": [], "protocol_version": "0.3.0",
        "mcp_servers": [{"name": "x", "command": "sh", "args": ["-c", format!("touch {}", marker.display())]}],
    })
}

#[tokio::test]
async fn a_web_page_cannot_drive_serve() {
    let mock = MockServer::start(vec![]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let marker = d.workspace().join("pwned");
    let url = format!("{}/v1/sessions", d.base);
    let body = evil_config(&marker).to_string();
    // The drive-by as a browser sends it: text/plain, with the page's Origin.
    let (status, err) = call(
        c.post(&url).header("content-type", "text/plain").header("origin", "https://evil.example").body(body.clone()),
    )
    .await;
    assert_eq!((status, err["error"].as_str()), (403, Some("FORBIDDEN_ORIGIN")), "{err}");
    // Without Origin (a non-browser), a text body is still not JSON; nor is a form.
    let (status, _) = call(c.post(&url).header("content-type", "text/plain").body(body.clone())).await;
    assert_eq!(status, 415);
    let (status, _) = call(c.post(&url).header("content-type", "application/x-www-form-urlencoded").body(body)).await;
    assert_eq!(status, 415);
    // As JSON from a trusted client: no command may start over HTTP unless allowed.
    let (status, err) = post(&c, &url, evil_config(&marker)).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["message"].as_str().unwrap().contains("--allow-mcp-command"), "{err}");
    // A DNS-rebound name is not this daemon's, on every kind of route.
    let (status, err) = call(c.get(format!("{}/v1/sessions", d.base)).header("host", "evil.example:3923")).await;
    assert_eq!((status, err["error"].as_str()), (403, Some("FORBIDDEN_HOST")), "{err}");
    let mcp = c
        .post(format!("{}/mcp", d.base))
        .header("host", "rebound.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}).to_string());
    assert_eq!(call(mcp).await.0, 403);
    let mcp = c
        .post(format!("{}/mcp", d.base))
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}).to_string());
    assert_eq!(call(mcp).await.0, 403);
    // A preflight from the page gets no CORS grant.
    let pre = c
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 403);
    assert!(pre.headers().get("access-control-allow-origin").is_none());
    // WebSocket upgrades carry the page's Origin too.
    let id = new_session(&c, &d.base, json!({})).await;
    let upgrade = |origin: Option<&str>| {
        let mut r = c
            .get(format!("{}/v1/sessions/{id}/ws", d.base))
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    assert_eq!(upgrade(Some("https://evil.example")).await.unwrap().status().as_u16(), 403);
    let rebound = c
        .get(format!("{}/v1/sessions/{id}/ws", d.base))
        .header("host", "rebound.example")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    assert_eq!(rebound.send().await.unwrap().status().as_u16(), 403, "a rebound Host on a WebSocket upgrade");
    assert_eq!(upgrade(None).await.unwrap().status().as_u16(), 101);
    // A plain answer carries no CORS header at all.
    let resp = c.get(format!("{}/v1/sessions", d.base)).send().await.unwrap();
    assert!(resp.headers().get("access-control-allow-origin").is_none());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the page's command ran");
}

#[tokio::test]
async fn allowed_hosts_origins_and_commands_are_one_flag_away() {
    let mock = MockServer::start(vec![]).await;
    let d = daemon(
        &mock.base_url(),
        &["--allow-origin", "http://localhost:5173", "--allow-host", "pirn.test", "--allow-mcp-command", "true"],
    )
    .await;
    let c = client();
    let url = format!("{}/v1/sessions", d.base);
    let resp = c.get(&url).header("origin", "http://localhost:5173").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["access-control-allow-origin"], "http://localhost:5173");
    assert_eq!(call(c.get(&url).header("host", "pirn.test:80")).await.0, 200);
    assert_eq!(call(c.get(&url).header("origin", "http://localhost:5174")).await.0, 403);
    // A listed command passes the HTTP check (`true` is no MCP server: it fails to start, 400 naming it).
    let cfg = json!({"model": "m", "system_prompt": "", "tools": [], "protocol_version": "0.3.0",
        "mcp_servers": [{"name": "t", "command": "true"}]});
    let (status, err) = post(&c, &url, cfg).await;
    assert_eq!(status, 400);
    assert!(!err["message"].as_str().unwrap().contains("--allow-mcp-command"), "{err}");
    // `*` restores stringd's permissive CORS on purpose.
    let any = daemon_with_env(&mock.base_url(), &["--allow-origin", "*"], &[]).await;
    let resp = c.get(format!("{}/v1/sessions", any.base)).header("origin", "https://a.example").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn console_ids_are_unguessable() {
    let mock = MockServer::start(vec![]).await;
    let d = daemon(&mock.base_url(), &["--terminals", "--console-shell", "/bin/sh"]).await;
    let c = client();
    let (status, body) = post(&c, &format!("{}/api/pty", d.base), json!({"cwd": d.workspace()})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_str().unwrap();
    let random = id.trim_start_matches("pty-");
    assert!(random.len() >= 24 && random.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
}

/// A workspace holding `d -> ../outside`, `a -> d/target.txt` (dangling),
/// `abs -> /etc`, `chain -> c2 -> d`, and `s -> secret/key.txt`.
fn hostile_repository(ws: &std::path::Path, outside: &std::path::Path) {
    use std::os::unix::fs::symlink;
    std::fs::write(outside.join("victim.txt"), "outside\n").unwrap();
    let rel_outside = pathdiff(outside, ws);
    symlink(&rel_outside, ws.join("d")).unwrap();
    symlink("d/target.txt", ws.join("a")).unwrap();
    symlink("/etc", ws.join("abs")).unwrap();
    symlink("d", ws.join("c2")).unwrap();
    symlink("c2", ws.join("chain")).unwrap();
    std::fs::create_dir_all(ws.join("secret")).unwrap();
    std::fs::write(ws.join("secret/key.txt"), "KEY-123\n").unwrap();
    symlink("secret/key.txt", ws.join("s")).unwrap();
}

/// `../../x`-style path from `base` to `target` (both absolute).
fn pathdiff(target: &std::path::Path, base: &std::path::Path) -> std::path::PathBuf {
    let ups = base.components().count() - 1;
    let mut p = std::path::PathBuf::new();
    for _ in 0..ups {
        p.push("..");
    }
    p.join(target.strip_prefix("/").unwrap())
}

#[tokio::test]
async fn symlinks_never_lead_file_tools_out_of_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let (mut w, mock) = super::tools::tool_worker(json!({"permissions": {"deny": ["read_file(secret/**)"]}})).await;
    let ws = w.workspace.path().canonicalize().unwrap();
    hostile_repository(&ws, outside.path());
    let refused = |out: &str| out.starts_with("Error:") && out.contains("outside the workspace");
    for path in ["a", "d/victim.txt", "chain/victim.txt", "abs/passwd", "d/new.txt"] {
        let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": path, "content": "pwned"})).await;
        assert!(refused(&out), "write_file {path}: {out}");
        let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": path})).await;
        assert!(refused(&out) || out.contains("no such file"), "read_file {path}: {out}");
        assert!(!out.contains("outside\n") && !out.contains("root:"), "read_file {path}: {out}");
    }
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "chain/victim.txt", "old_string": "outside", "new_string": "pwned"}),
    )
    .await;
    assert!(refused(&out), "edit_file: {out}");
    for (tool, args) in [("glob", json!({"pattern": "**/*"})), ("grep", json!({"pattern": "outside|root"}))] {
        let out = call_tool(&mut w, &mock, tool, args).await;
        assert!(!out.contains("victim") && !out.contains("passwd") && !out.contains("root:"), "{tool}: {out}");
    }
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "x", "path": "chain"})).await;
    assert!(refused(&out), "grep through a chain: {out}");
    // The deny rule holds for the link's target, not just its name.
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "s"})).await;
    assert!(out.contains("denied") && !out.contains("KEY-123"), "{out}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "something was created outside");
    assert_eq!(std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(), "outside\n");
}

/// A directory that is neither the workspace nor beneath the temp dir (which
/// `workspace-write` may write): cargo's target tmp dir, unless the checkout
/// itself is under the temp dir (a clone in /tmp), then /var/tmp or $HOME.
fn home_outside_tmp() -> tempfile::TempDir {
    let canon = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
    let tmp = canon(&std::env::temp_dir());
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let candidates = [Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))), Some("/var/tmp".into()), home];
    for root in candidates.into_iter().flatten() {
        if canon(&root).starts_with(&tmp) {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new().prefix("pirn-home").tempdir_in(&root) {
            return dir;
        }
    }
    panic!(
        "no writable directory outside {} for the test's HOME (tried the target tmp dir, /var/tmp, $HOME)",
        tmp.display()
    );
}

#[tokio::test]
async fn bash_writes_only_where_its_sandbox_allows() {
    let home = home_outside_tmp();
    let home_s = home.path().to_str().unwrap().to_owned();
    let script = "for d in \"$HOME\" \"$PWD\" /tmp; do f=\"$d/pirn-sbx-$$\"; \
        if echo x > \"$f\" 2>/dev/null; then echo \"wrote $d\"; rm -f \"$f\"; else echo \"denied $d\"; fi; done; \
        echo x > /dev/null && echo devnull-ok";
    for (mode, home_ok, ws_ok, tmp_ok) in
        [("workspace-write", false, true, true), ("read-only", false, false, false), ("off", true, true, true)]
    {
        let (mut w, mock) = mock_worker(vec![], &[("HOME", &home_s)], json!({"sandbox": mode})).await;
        let out = call_tool(&mut w, &mock, "bash", json!({"command": script})).await;
        let ws = w.workspace.path().canonicalize().unwrap();
        let said = |ok: bool, d: &str| format!("{} {d}", if ok { "wrote" } else { "denied" });
        for (ok, d) in [(home_ok, home_s.clone()), (ws_ok, ws.display().to_string()), (tmp_ok, "/tmp".to_owned())] {
            assert!(out.contains(&said(ok, &d)), "{mode}: expected {:?} in {out}", said(ok, &d));
        }
        assert!(out.contains("devnull-ok"), "{mode}: {out}");
        let status = w.status("st").await;
        assert_eq!(status["sandbox"], mode, "{status}");
    }
}

#[tokio::test]
async fn no_network_denies_tcp_and_children_get_an_allowlisted_environment() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            drop(s);
        }
    });
    let connect = format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1 && echo connected || echo refused");
    let envs = [
        ("PIRN_STORE", "postgres://pirn:hunter2@db/pirn"),
        ("DATABASE_URL", "postgres://u:hunter2@db/x"),
        ("PIRN_TOKEN", "hunter2"),
        ("MY_SETTING", "visible"),
        ("LC_ALL", "C"),
    ];
    let (mut w, mock) =
        mock_worker(vec![], &envs, json!({"sandbox_network": false, "env_passthrough": ["MY_SETTING"]})).await;
    let out = call_tool(&mut w, &mock, "bash", json!({"command": connect})).await;
    assert!(out.contains("refused") && !out.contains("connected"), "{out}");
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "env"})).await;
    assert!(!out.contains("hunter2") && !out.contains("PIRN_"), "{out}");
    assert!(out.contains("MY_SETTING=visible") && out.contains("LC_ALL=C"), "{out}");
    let (_, init_ok) = super::worker::Worker::ready(&mock.base_url(), &[], json!({"sandbox_network": false})).await;
    assert_eq!(init_ok["sandbox"], "workspace-write, no network", "{init_ok}");
    // With the network on (the default) the same connection works.
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let out = call_tool(&mut w, &mock, "bash", json!({"command": connect})).await;
    assert!(out.contains("connected"), "{out}");
}

#[tokio::test]
async fn a_0_2_client_sees_no_sandbox_field_but_gets_the_sandbox() {
    let mock = MockServer::start(vec![]).await;
    let home = home_outside_tmp();
    let w = super::worker::Worker::spawn(&mock.base_url(), &[("HOME", home.path().to_str().unwrap())]).await;
    let (mut w, init_ok) = w.init("0.2.0", json!({})).await;
    assert!(init_ok.get("sandbox").is_none(), "{init_ok}");
    let status = w.status("st").await;
    assert!(status.get("sandbox").is_none(), "{status}");
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "echo x > \"$HOME/f\" || echo denied"})).await;
    assert!(out.contains("denied"), "{out}");
    assert!(!home.path().join("f").exists());
}

#[tokio::test]
async fn send_options_over_http_grant_no_command_and_read_no_file() {
    use super::mock::Reply;
    // A session without bash: a send's verify_command must not run a shell
    // (the send is refused: a check that cannot run never lets it end `ok`).
    let write = || Reply::tool("write_file", json!({"file_path": "a.txt", "content": "x\n"}));
    let mock = MockServer::start(vec![write(), Reply::text(&["Done."])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({"tools": ["write_file"]})).await;
    let marker = d.workspace().join("pwned");
    let send = json!({"message": "write a.txt", "verify_command": format!("touch {}", marker.display())});
    let (status, body) = post(&c, &format!("{}/v1/sessions/{sid}/sends?stream=1", d.base), send).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("bash is not among the enabled tools"), "{body}");
    assert!(!marker.exists(), "a send's verify_command ran a shell in a session without bash");
    // Without a token and from a page's Origin the send options are not reachable at all.
    let page = c
        .post(format!("{}/v1/sessions/{sid}/sends", d.base))
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .body(json!({"message": "x", "verify_command": "touch pwned2"}).to_string());
    assert_eq!(call(page).await.0, 403);
    // An output_schema cannot make pirn read a file through $ref.
    let secret = d.workspace().join("secret.json");
    std::fs::write(&secret, r#"{"type": "string"}"#).unwrap();
    let schema = json!({"$ref": format!("file://{}", secret.display())});
    let (status, body) =
        post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "x", "output_schema": schema}))
            .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("INVALID_REQUEST")), "{body}");
}
