// Apollo Client 4 and urql against a running gateway, as a dashboard would use them:
// automatic persisted queries (hash-only GETs), ETag revalidation, compressed answers.
// Usage: node clients.mjs http://host:port/graphql ; prints one JSON report on stdout,
// which tests/test_clients.py judges. Every request is logged as the server answered it.
import { createHash } from "node:crypto";

import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { Client, fetchExchange } from "@urql/core";
import { persistedExchange } from "@urql/exchange-persisted";

const url = process.argv[2];
const sha256 = (text) => createHash("sha256").update(text).digest("hex");

// A document per client: each must be registered by its own client's fallback.
const APOLLO = gql`query ApolloNames { hypervisors { nodes { name zone } } }`;
const URQL = gql`query UrqlNames { hypervisors { nodes { name } } }`;

/** fetch, logging each exchange, and revalidating GETs with the ETag it kept
 * (neither client library keeps ETags itself; a browser's HTTP cache would). */
function recordingFetch(log) {
  const kept = new Map(); // url -> { etag, body, headers }
  return async (input, init = {}) => {
    const method = (init.method ?? "GET").toUpperCase();
    const target = String(input);
    const headers = new Headers(init.headers);
    const held = method === "GET" ? kept.get(target) : undefined;
    if (held) headers.set("if-none-match", held.etag);
    const response = await fetch(input, { ...init, headers });
    const sentQuery =
      method === "GET"
        ? new URL(target).searchParams.has("query")
        : "query" in JSON.parse(init.body ?? "{}");
    const entry = {
      client: log.name,
      method,
      sentQuery,
      status: response.status,
      encoding: response.headers.get("content-encoding"),
      etag: response.headers.get("etag"),
    };
    log.entries.push(entry);
    if (response.status === 304 && held) {
      return new Response(held.body, { status: 200, headers: held.headers });
    }
    const body = await response.text();
    entry.bytes = body.length;
    entry.code = JSON.parse(body).errors?.[0]?.extensions?.code ?? null;
    const etag = response.headers.get("etag");
    if (method === "GET" && etag) kept.set(target, { etag, body, headers: response.headers });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

async function apollo(log) {
  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: new PersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(
      new HttpLink({ uri: url, fetch: recordingFetch(log) }),
    ),
  });
  const answers = [];
  for (let i = 0; i < 3; i++) {
    const { data, error } = await client.query({ query: APOLLO, fetchPolicy: "network-only" });
    if (error) throw error;
    answers.push(data.hypervisors.nodes.length);
  }
  return answers;
}

async function urql(log) {
  const client = new Client({
    url,
    fetch: recordingFetch(log),
    exchanges: [
      persistedExchange({ preferGetForPersistedQueries: true, generateHash: async (q) => sha256(q) }),
      fetchExchange,
    ],
  });
  const answers = [];
  for (let i = 0; i < 3; i++) {
    const { data, error } = await client
      .query(URQL, {}, { requestPolicy: "network-only" })
      .toPromise();
    if (error) throw error;
    answers.push(data.hypervisors.nodes.length);
  }
  return answers;
}

const apolloLog = { name: "apollo", entries: [] };
const urqlLog = { name: "urql", entries: [] };
const report = {
  apollo: await apollo(apolloLog),
  urql: await urql(urqlLog),
  requests: [...apolloLog.entries, ...urqlLog.entries],
};
process.stdout.write(JSON.stringify(report));
