//! A minimal HTTP/1.1 JSON client for the hook protocol: one kept-alive connection per lane
//! (reports and polls never wait behind each other), TCP_NODELAY, and a retry on a new
//! connection when one was closed before it answered: the server closes kept-alive connections
//! that stay idle, and under a burst of other connections it may close a new one before reading
//! it (hooks/PROTOCOL.md, "Connections"). Every request of the protocol is idempotent.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::protocol::{ErrorReply, PROTOCOL_VERSION, TOKEN_HEADER};
use crate::HookError;

/// New connections tried after a request's connection closed before it answered (20, 80 and
/// 320 ms apart after the first).
const RETRIES: u32 = 4;

/// Which connection a request uses.
#[derive(Clone, Copy)]
pub(crate) enum Lane {
    Report,
    Poll,
}

/// A kept-alive connection: where requests go, and the task that drives it.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    task: JoinHandle<()>,
}

pub(crate) struct Client {
    server: String,
    token: String,
    report: Mutex<Option<Conn>>,
    poll: Mutex<Option<Conn>>,
}

impl Client {
    pub(crate) fn new(server: String, token: String) -> Client {
        Client {
            server,
            token,
            report: Mutex::new(None),
            poll: Mutex::new(None),
        }
    }

    async fn connect(&self) -> Result<Conn, HookError> {
        let stream = TcpStream::connect(&self.server)
            .await
            .map_err(|e| HookError::Connect(format!("{}: {e}", self.server)))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| HookError::Connect(format!("{}: {e}", self.server)))?;
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { sender, task })
    }

    /// Close both connections and wait until their sockets are gone (before a checkpoint: a
    /// snapshot must hold no connection to the server).
    pub(crate) async fn disconnect(&self) {
        for slot in [&self.report, &self.poll] {
            if let Some(c) = slot.lock().await.take() {
                drop(c.sender);
                // The connection task ends once its sender is gone; make sure it has.
                c.task.abort();
                let _ = c.task.await;
            }
        }
    }

    /// POST `body` as JSON to `/v{PROTOCOL_VERSION}/{endpoint}` and decode the answer.
    pub(crate) async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        lane: Lane,
        endpoint: &str,
        body: &B,
    ) -> Result<R, HookError> {
        let path = format!("/v{PROTOCOL_VERSION}/{endpoint}");
        let bytes =
            Bytes::from(serde_json::to_vec(body).map_err(|e| {
                HookError::Usage(format!("cannot encode the {endpoint} request: {e}"))
            })?);
        let slot = match lane {
            Lane::Report => &self.report,
            Lane::Poll => &self.poll,
        };
        let mut slot = slot.lock().await;
        let mut attempt = 0;
        let (status, answer) = loop {
            let sender = match slot.as_mut() {
                Some(c) if !c.sender.is_closed() => &mut c.sender,
                _ => &mut slot.insert(self.connect().await?).sender,
            };
            match self.send(sender, &path, bytes.clone()).await {
                Ok(r) => break r,
                Err(e) => {
                    *slot = None;
                    attempt += 1;
                    if attempt > RETRIES {
                        return Err(HookError::Http(format!("{path}: {e}")));
                    }
                    // The first retry at once (a kept-alive connection found closed), later
                    // ones after a pause that outlasts a burst of connections at the server.
                    if attempt > 1 {
                        tokio::time::sleep(Duration::from_millis(5 << (2 * (attempt - 1)))).await;
                    }
                }
            }
        };
        drop(slot);
        if status == StatusCode::OK {
            serde_json::from_slice(&answer)
                .map_err(|e| HookError::Protocol(format!("unexpected answer to {path}: {e}")))
        } else {
            let reply: Option<ErrorReply> = serde_json::from_slice(&answer).ok();
            Err(HookError::Rejected {
                status: status.as_u16(),
                code: reply.as_ref().map_or("unknown".into(), |r| r.error.clone()),
                reason: reply.map_or_else(
                    || String::from_utf8_lossy(&answer).into_owned(),
                    |r| r.reason,
                ),
            })
        }
    }

    async fn send(
        &self,
        sender: &mut SendRequest<Full<Bytes>>,
        path: &str,
        body: Bytes,
    ) -> Result<(StatusCode, Bytes), hyper::Error> {
        sender.ready().await?;
        let req = Request::post(path)
            .header(HOST, &self.server)
            .header(TOKEN_HEADER, &self.token)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .expect("a request from valid parts");
        let resp = sender.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}
