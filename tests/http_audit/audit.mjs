// Runs graphql-http's server audits against the URL given as the only argument and
// prints one JSON array: {id, name, status, reason} per audit, status "ok", "warn",
// "notice" or "error" as the suite grades it.
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
const results = [];
for (const audit of serverAudits({ url, fetchFn: fetch })) {
  const result = await audit.fn();
  results.push({ id: audit.id, name: audit.name, status: result.status, reason: result.reason ?? null });
}
process.stdout.write(JSON.stringify(results));
