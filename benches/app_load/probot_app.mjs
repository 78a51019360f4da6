// The peer: a minimal Probot 14 app. `createNodeMiddleware` on a plain node http server
// verifies X-Hub-Signature-256 and hands each event to a handler that only records it in
// memory (one array push). It acknowledges without storing anything.
//
//   node probot_app.mjs PORT
//
// Env: WEBHOOK_SECRET. GET /count answers how many events the handler recorded.

import { createServer } from "node:http";
import { generateKeyPairSync } from "node:crypto";
import { Probot, createNodeMiddleware } from "probot";

const port = Number(process.argv[2] ?? 3001);
const secret = process.env.WEBHOOK_SECRET;
if (!secret) throw new Error("WEBHOOK_SECRET is required");

// Probot wants an App id and key; nothing here calls GitHub, so a throwaway key will do.
const { privateKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs1", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});

const recorded = [];
const appFn = (app) => {
  app.onAny(async (context) => {
    recorded.push({ id: context.id, name: context.name });
  });
};

const probot = new Probot({ appId: 1, privateKey, secret, logLevel: "info" });
const middleware = await createNodeMiddleware(appFn, {
  probot,
  webhooksPath: "/api/github/webhooks",
});

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/count") {
    res.writeHead(200, { "content-type": "text/plain" }).end(`${recorded.length}\n`);
    return;
  }
  middleware(req, res, () => res.writeHead(404).end());
});
server.keepAliveTimeout = 60_000;
server.listen(port, "127.0.0.1", () => {
  console.error(`probot app: listening on http://127.0.0.1:${port}/api/github/webhooks`);
});
