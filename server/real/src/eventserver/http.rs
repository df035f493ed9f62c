//! The HTTP side: routing `/vN/<endpoint>`, the token, JSON bodies, long polls, and 4xx answers
//! with a JSON reason. A rejected request never stops the run.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::conns::{Ticket, BODY_TIMEOUT};
use super::protocol::{
    CancelRequest, DoneRequest, ErrorReply, EventsRequest, PausedRequest, PollReply, PollRequest,
    RegisterRequest, ResumedRequest, PROTOCOL_VERSION, TOKEN_HEADER,
};
use super::state::ServerError;
use super::Shared;

/// Request bodies larger than this are refused (413).
const MAX_BODY: usize = 16 << 20;
const DEFAULT_WAIT_MS: u64 = 25_000;
const MAX_WAIT_MS: u64 = 60_000;

pub(super) async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    ticket: Arc<Ticket>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let answer = route(req, &shared, &ticket).await;
    let (status, body) = match answer {
        Ok(body) => (StatusCode::OK, body),
        Err(e) => {
            tracing::debug!(
                "event server: {path}: {} {}: {}",
                e.status,
                e.code,
                e.reason
            );
            shared.rejected(e.code);
            let reply = ErrorReply {
                protocol: PROTOCOL_VERSION,
                error: e.code.to_string(),
                reason: e.reason,
            };
            (
                StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST),
                json(&reply),
            )
        }
    };
    let mut resp = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json");
    if !ticket.trusted() {
        // Nobody who lacks the run's token keeps a connection (nor has its body read).
        resp = resp.header(CONNECTION, "close");
    }
    let resp = resp
        .body(Full::new(body))
        .expect("a response from valid parts");
    Ok(resp)
}

fn json<T: Serialize>(v: &T) -> Bytes {
    Bytes::from(serde_json::to_vec(v).expect("protocol replies always serialise"))
}

fn unknown_endpoint(path: &str) -> ServerError {
    ServerError::new(
        404,
        "unknown-endpoint",
        format!(
            "no endpoint {path}: use POST /v{PROTOCOL_VERSION}/register, events, done, poll, cancel, paused or resumed"
        ),
    )
}

/// `/v1/register` -> (1, "register").
fn split_path(path: &str) -> Result<(u32, &str), ServerError> {
    let unknown = || unknown_endpoint(path);
    let rest = path.strip_prefix("/v").ok_or_else(unknown)?;
    let (version, endpoint) = rest.split_once('/').ok_or_else(unknown)?;
    let version: u32 = version.parse().map_err(|_| unknown())?;
    Ok((version, endpoint))
}

async fn body<T: DeserializeOwned>(req: Request<Incoming>) -> Result<T, ServerError> {
    let read = Limited::new(req.into_body(), MAX_BODY).collect();
    let bytes = tokio::time::timeout(BODY_TIMEOUT, read)
        .await
        .map_err(|_| {
            ServerError::new(
                408,
                "slow-body",
                format!(
                    "the request body did not arrive within {} s",
                    BODY_TIMEOUT.as_secs()
                ),
            )
        })?
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                ServerError::new(
                    413,
                    "too-large",
                    format!("request body over {MAX_BODY} bytes"),
                )
            } else {
                ServerError::new(
                    400,
                    "malformed",
                    format!("cannot read the request body: {e}"),
                )
            }
        })?
        .to_bytes();
    serde_json::from_slice(&bytes)
        .map_err(|e| ServerError::new(400, "malformed", format!("malformed JSON body: {e}")))
}

async fn route(
    req: Request<Incoming>,
    shared: &Arc<Shared>,
    ticket: &Ticket,
) -> Result<Bytes, ServerError> {
    shared.counted();
    let path = req.uri().path().to_string();
    let (version, endpoint) = split_path(&path)?;
    if version != PROTOCOL_VERSION {
        return Err(ServerError::new(
            426,
            "protocol-version",
            format!("hook protocol version {version} is not supported; this flymc speaks version {PROTOCOL_VERSION}: update the hook"),
        ));
    }
    if !matches!(
        endpoint,
        "register" | "events" | "done" | "poll" | "cancel" | "paused" | "resumed"
    ) {
        return Err(unknown_endpoint(&path));
    }
    if req.method() != Method::POST {
        return Err(ServerError::new(
            405,
            "method",
            format!("{path} takes POST, not {}", req.method()),
        ));
    }
    let token = req
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    shared.with(|st| st.check_token(token.as_deref()))?;
    ticket.trust();
    match endpoint {
        "register" => {
            let r: RegisterRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.register(&r))?))
        }
        "events" => {
            let r: EventsRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.intercept(&r))?))
        }
        "done" => {
            let r: DoneRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.done(&r))?))
        }
        "cancel" => {
            let r: CancelRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.cancel(&r))?))
        }
        "paused" => {
            let r: PausedRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.paused(&r))?))
        }
        "resumed" => {
            let r: ResumedRequest = body(req).await?;
            Ok(json(&shared.with(|st| st.resumed(&r))?))
        }
        _ => {
            let r: PollRequest = body(req).await?;
            let (orders, pause) = poll(shared, &r, token.as_deref()).await?;
            Ok(json(&PollReply { orders, pause }))
        }
    }
}

/// Answer at once when there are orders after `r.after` or a pause is asked, else hold the
/// request until there are or the wait is over (then answer with none).
async fn poll(
    shared: &Arc<Shared>,
    r: &PollRequest,
    token: Option<&str>,
) -> Result<(Vec<super::protocol::Order>, Option<u64>), ServerError> {
    let wait = Duration::from_millis(r.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
    let deadline = tokio::time::Instant::now() + wait;
    let notify = shared.notify(r.node);
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (orders, pause) = shared.with(|st| {
            st.check_token(token)?;
            st.poll(r)
        })?;
        if !orders.is_empty() || pause.is_some() {
            return Ok((orders, pause));
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => return Ok((Vec::new(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_carry_the_version() {
        assert_eq!(split_path("/v1/poll").unwrap(), (1, "poll"));
        assert_eq!(split_path("/v0/register").unwrap(), (0, "register"));
        assert_eq!(split_path("/register").unwrap_err().status, 404);
        assert_eq!(split_path("/vx/poll").unwrap_err().status, 404);
        let e = unknown_endpoint("/v1/teleport");
        assert!(
            e.reason.starts_with("no endpoint /v1/teleport:"),
            "{}",
            e.reason
        );
    }
}
