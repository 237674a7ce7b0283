//! How spans leave: OTLP over HTTP/protobuf, with pirn's own reqwest and
//! rustls-with-ring (no second HTTP or TLS stack), from the SDK's batch
//! processor thread.
//!
//! Owns: the tracer provider ([`provider`]: endpoint, headers and timeout
//! from the standard `OTEL_EXPORTER_OTLP_*` variables as the OTLP exporter
//! reads them; the service name from `OTEL_SERVICE_NAME` /
//! `OTEL_RESOURCE_ATTRIBUTES`, default `pirn`; the batch queue from
//! `OTEL_BSP_*`), the HTTP client the exporter calls ([`OtlpClient`]: the
//! processor's thread has no async runtime, so each export runs on a small
//! current-thread runtime of that thread), and the count of exports that
//! failed ([`report_failures`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};

/// Default wait for the collector's answer (OTLP's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Exports that failed (collector down, refused, timed out).
static FAILED: AtomicU64 = AtomicU64::new(0);

/// The tracer provider of the environment `get` describes. Errors: the
/// exporter cannot be built (a bad endpoint URL).
pub fn provider(get: &dyn Fn(&str) -> Option<String>) -> Result<SdkTracerProvider, String> {
    let millis = |k: &str| get(k).and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_millis);
    let timeout = millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| millis("OTEL_EXPORTER_OTLP_TIMEOUT"));
    let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(2)))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpClient(client))
        .with_timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let processor = BatchSpanProcessor::builder(exporter).build();
    let resource = Resource::builder().with_service_name(service_name(get)).build();
    Ok(SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build())
}

/// `OTEL_SERVICE_NAME`, else `pirn` (`OTEL_RESOURCE_ATTRIBUTES`'s
/// `service.name` is read by the resource builder, which this overrides
/// only when neither names one).
fn service_name(get: &dyn Fn(&str) -> Option<String>) -> String {
    let from_attributes = get("OTEL_RESOURCE_ATTRIBUTES")
        .and_then(|a| a.split(',').find_map(|kv| kv.trim().strip_prefix("service.name=").map(|v| v.trim().to_owned())));
    get("OTEL_SERVICE_NAME").filter(|v| !v.trim().is_empty()).or(from_attributes).unwrap_or_else(|| "pirn".to_owned())
}

/// Logs how many exports failed, when any did.
pub fn report_failures() {
    let failed = FAILED.load(Ordering::Relaxed);
    if failed > 0 {
        tracing::warn!(failed_exports = failed, "OpenTelemetry: span exports failed (collector unreachable?)");
    }
}

/// The exporter's HTTP client: pirn's reqwest, run on a current-thread
/// runtime of the calling (batch processor) thread.
#[derive(Debug)]
pub struct OtlpClient(reqwest::Client);

thread_local! {
    static RUNTIME: Option<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_all().build().ok();
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.0.clone();
        let sent = RUNTIME.with(|rt| {
            let rt = rt.as_ref().ok_or("no runtime for the OTLP exporter")?;
            rt.block_on(async move {
                let response = client.execute(request).await?;
                let status = response.status();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, body))
            })
            .map_err(HttpError::from)
        });
        let (status, body) = sent.inspect_err(|_| {
            FAILED.fetch_add(1, Ordering::Relaxed);
        })?;
        if !status.is_success() {
            FAILED.fetch_add(1, Ordering::Relaxed);
        }
        let mut response = Response::new(body);
        *response.status_mut() = status;
        Ok(response)
    }
}
