"""Run by Arize Phoenix's own virtual environment (scripts/install_phoenix.sh), not by failforge's Python:
send failforge's OTLP-JSON traces to a Phoenix server on loopback and read them back with Phoenix's client.

    python phoenix_roundtrip.py BASE_URL TRACES.jsonl OUT.json

Each line of TRACES.jsonl is an OTLP ``ExportTraceServiceRequest`` in JSON. OTLP/JSON writes trace and span
ids as hex where protobuf's JSON mapping expects base64, so the ids are converted (as an OpenTelemetry
collector's OTLP/JSON receiver does) and the line is parsed into the protobuf message with
``google.protobuf.json_format`` (an unknown field or a wrong type fails here), then posted as
``application/x-protobuf`` to ``/v1/traces`` (Phoenix takes protobuf only). The spans Phoenix stored are read
back with ``phoenix.client.Client().spans.get_spans`` and written to OUT.json.
"""

import base64
import json
import sys
import time
import urllib.request

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from phoenix.client import Client


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode("ascii")


def to_protobuf(line: str) -> bytes:
    request = json.loads(line)
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64(span[key])
    return json_format.ParseDict(request, ExportTraceServiceRequest()).SerializeToString()


def main(base_url: str, traces: str, out: str) -> None:
    lines = [line for line in open(traces, encoding="utf-8") if line.strip()]
    expected = 0
    for line in lines:
        body = to_protobuf(line)
        expected += sum(len(s["spans"]) for r in json.loads(line)["resourceSpans"] for s in r["scopeSpans"])
        req = urllib.request.Request(
            f"{base_url}/v1/traces", data=body, headers={"Content-Type": "application/x-protobuf"}
        )
        with urllib.request.urlopen(req, timeout=60) as response:
            assert response.status == 200, response.status
    client = Client(base_url=base_url)
    spans: list = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # Phoenix inserts spans in the background after it answered
        spans = client.spans.get_spans(project_identifier="default", limit=expected + 10)
        if len(spans) >= expected:
            break
        time.sleep(1)
    json.dump({"sent_traces": len(lines), "sent_spans": expected, "spans": spans}, open(out, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:4])
