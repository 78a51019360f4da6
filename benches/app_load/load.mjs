// The load generator: autocannon posting the webhook with a fresh X-GitHub-Delivery per
// request, and that id in the body too, signed afresh (a repeated id, or the same body
// under another id, would be answered "seen before" without being stored). Prints one JSON object with the warm-up and the measured run.
//
//   node load.mjs URL PAYLOAD EVENT CONNECTIONS WARMUP_REQUESTS DURATION_S [RATE_PER_S]
//
// Every autocannon run sends a fixed number of requests, so every request sent has been
// answered when it ends and a server's stored rows can be compared with its 2xx answers exactly (a run
// cut at a deadline leaves up to CONNECTIONS requests in flight, stored but unanswered).
// Saturated, the measured run is a series of such runs of about 3 s each, sized from the
// rate just seen, until DURATION_S have passed; paced, one run of RATE_PER_S x DURATION_S
// requests. Throughput is 2xx answers over the runs' own elapsed time.
//
// Latencies are recorded per 2xx answer with sub-millisecond precision (autocannon's own
// histogram floors to whole milliseconds); paced, the p99 that autocannon corrects for
// coordinated omission is reported beside it.
//
// Env: WEBHOOK_SECRET; SERVER_PID (optional) to report the server's CPU time (user +
// system, from /proc/PID/stat) beside the load generator's own.

import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";

const [url, payloadPath, event, connections, warmupRequests, durationS, rate] = process.argv.slice(2);
const secret = process.env.WEBHOOK_SECRET;
if (!url || !payloadPath || !event || !secret) {
  console.error("usage: WEBHOOK_SECRET=... node load.mjs URL PAYLOAD EVENT CONNECTIONS WARMUP_REQUESTS DURATION_S [RATE]");
  process.exit(2);
}

// The payload with a last field naming the delivery: `{...,"bench_delivery":"<uuid>"}`.
const payload = readFileSync(payloadPath, "utf8").trimEnd();
const open = payload.slice(0, payload.lastIndexOf("}"));
const headers = {
  "content-type": "application/json",
  "user-agent": "GitHub-Hookshot/bench",
  "x-github-event": event,
};
function delivery() {
  const id = randomUUID();
  const body = `${open},"bench_delivery":"${id}"}`;
  const signature = "sha256=" + createHmac("sha256", secret).update(body).digest("hex");
  return { id, body, signature };
}
const body = delivery().body;

const serverPid = process.env.SERVER_PID;
const ticksPerS = 100; // USER_HZ on Linux

/** The server's CPU seconds so far (user + system), or null without SERVER_PID. */
function serverCpuS() {
  if (!serverPid) return null;
  const stat = readFileSync(`/proc/${serverPid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / ticksPerS;
}

/** One autocannon run of exactly `amount` requests; every one is answered when it ends. */
async function runOnce(amount, overallRate) {
  const latencies = [];
  const serverCpuBefore = serverCpuS();
  const clientCpuBefore = process.cpuUsage();
  const options = {
    url,
    connections: Number(connections),
    amount,
    requests: [
      {
        method: "POST",
        body,
        headers,
        setupRequest: (request) => {
          const d = delivery();
          return {
            ...request,
            body: d.body,
            headers: { ...headers, "x-github-delivery": d.id, "x-hub-signature-256": d.signature },
          };
        },
      },
    ],
  };
  if (overallRate) options.overallRate = Number(overallRate);
  const instance = autocannon(options);
  instance.on("response", (_client, statusCode, _bytes, responseTimeMs) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs);
  });
  const result = await instance;
  const serverCpuAfter = serverCpuS();
  const clientCpu = process.cpuUsage(clientCpuBefore);
  return {
    latencies,
    seconds: (new Date(result.finish) - new Date(result.start)) / 1000,
    requests: result.requests.total,
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    by_status: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
    ),
    autocannon_p99_ms: result.latency.p99,
    server_cpu_s: serverCpuAfter === null ? null : serverCpuAfter - serverCpuBefore,
    client_cpu_s: (clientCpu.user + clientCpu.system) / 1e6,
  };
}

/** Sums runs into one: counts added, latencies pooled, percentiles over the pool. */
function summarize(parts) {
  const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
  const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : null);
  const sum = (key) => parts.reduce((total, p) => total + (p[key] ?? 0), 0);
  const byStatus = {};
  for (const p of parts) {
    for (const [code, n] of Object.entries(p.by_status)) byStatus[code] = (byStatus[code] ?? 0) + n;
  }
  const seconds = sum("seconds");
  return {
    runs: parts.length,
    seconds,
    requests: sum("requests"),
    ok_2xx: latencies.length,
    non_2xx: sum("non_2xx"),
    errors: sum("errors"),
    timeouts: sum("timeouts"),
    by_status: byStatus,
    ok_per_s: latencies.length / seconds,
    p50_ms: at(0.5),
    p90_ms: at(0.9),
    p99_ms: at(0.99),
    max_ms: latencies.at(-1) ?? null,
    autocannon_p99_ms: parts.length === 1 ? parts[0].autocannon_p99_ms : null,
    server_cpu_s: serverPid ? sum("server_cpu_s") : null,
    client_cpu_s: sum("client_cpu_s"),
  };
}

/** Saturated: back-to-back runs of about CHUNK_S each, sized from the rate just seen, until
 * `seconds` have passed. Paced: one run of rate x seconds requests. */
async function measure(seconds, overallRate, perSecond) {
  if (overallRate) return summarize([await runOnce(Math.ceil(overallRate * seconds), overallRate)]);
  const parts = [];
  let elapsed = 0;
  while (elapsed < seconds) {
    const part = await runOnce(Math.ceil(perSecond * Math.min(CHUNK_S, seconds - elapsed)));
    parts.push(part);
    elapsed += part.seconds;
    perSecond = part.latencies.length / part.seconds;
  }
  return summarize(parts);
}

const CHUNK_S = 3;
const warmup = summarize([await runOnce(Number(warmupRequests), rate ? Number(rate) : undefined)]);
const measured = await measure(Number(durationS), rate ? Number(rate) : undefined, warmup.ok_per_s);
console.log(JSON.stringify({ url, event, payload_bytes: body.length, connections: Number(connections), rate: rate ? Number(rate) : null, warmup, measured }));
