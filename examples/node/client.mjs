// Send Sudoku puzzles to sudokud workers over RabbitMQ and check the answers.
//
// Written from the wire protocol (docs/protocol.md) alone, with amqplib:
//
//     npm ci
//     node client.mjs [PUZZLE_FILE]
//
// Each puzzle goes out as its own job, then all of them again as one batch
// job, plus one job that is invalid on purpose. Answers come back on a
// private reply queue and are matched by correlationId. Exits 0 when every
// answer is right, 1 otherwise. Settings from the environment: AMQP_URL
// (default amqp://guest:guest@127.0.0.1:5672/%2f), SUDOKUD_JOBS_QUEUE
// (default sudoku.jobs), SUDOKUD_TIMEOUT (seconds, default 60).
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import amqp from "amqplib";

const url = process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672/%2f";
const jobsQueue = process.env.SUDOKUD_JOBS_QUEUE ?? "sudoku.jobs";
const timeoutMs = 1000 * Number(process.env.SUDOKUD_TIMEOUT ?? "60");
const puzzles = process.argv[2]
  ? readFileSync(process.argv[2], "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"))
  : ["53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"];

// A full grid, every row, column and box 1-9, every given kept.
function isSolution(solution, puzzle) {
  if (typeof solution !== "string" || solution.length !== 81) return false;
  if ([...puzzle].some((p, i) => !".0".includes(p) && p !== solution[i])) return false;
  const units = [];
  for (let k = 0; k < 9; k++) {
    const row = [], col = [], box = [];
    for (let i = 0; i < 9; i++) {
      row.push(k * 9 + i);
      col.push(i * 9 + k);
      box.push((Math.floor(k / 3) * 3 + Math.floor(i / 3)) * 9 + (k % 3) * 3 + (i % 3));
    }
    units.push(row, col, box);
  }
  return units.every((u) => u.map((i) => solution[i]).sort().join("") === "123456789");
}

const connection = await amqp.connect(url);
const channel = await connection.createConfirmChannel();
const { queue: replies } = await channel.assertQueue("", { exclusive: true, autoDelete: true });

const expected = new Map(); // correlationId -> [job, check]
let failures = 0;
const answered = new Promise((resolve) => {
  const timer = setTimeout(() => {
    console.error(`no answer within ${timeoutMs / 1000} s for ${expected.size} jobs`);
    failures += expected.size;
    resolve();
  }, timeoutMs);
  channel.consume(replies, (message) => {
    const entry = expected.get(message.properties.correlationId);
    if (!entry) return; // an answer to a job sent twice, or not ours
    expected.delete(message.properties.correlationId);
    const [job, check] = entry;
    const result = JSON.parse(message.content.toString());
    let right;
    try {
      right = result.id === job.id && check(result);
    } catch {
      right = false; // a field missing, or of another type
    }
    if (!right) {
      console.error(`wrong answer to job ${job.id}: ${JSON.stringify(result)}`);
      failures += 1;
    }
    if (expected.size === 0) {
      clearTimeout(timer);
      resolve();
    }
  }, { noAck: true });
});

function send(job, check) {
  const correlationId = randomUUID();
  expected.set(correlationId, [job, check]);
  channel.sendToQueue(jobsQueue, Buffer.from(JSON.stringify(job)), {
    persistent: true, contentType: "application/json", replyTo: replies, correlationId, mandatory: true,
  });
}

puzzles.forEach((puzzle, i) =>
  send({ id: i, puzzle }, (r) => r.status === "solved" && isSolution(r.solution, puzzle)));
send({ id: "batch", puzzles, mode: "unique" }, (r) =>
  r.results.length === puzzles.length &&
  r.results.every((e, i) => e.status === "solved" && e.unique && isSolution(e.solution, puzzles[i])));
send({ id: "bad", puzzle: "55" + ".".repeat(79) }, (r) =>
  r.status === "invalid" && r.error.includes("row 1 has 5 twice"));
await channel.waitForConfirms(); // the broker has every job

await answered;
await connection.close();
console.log(`${puzzles.length} puzzles, one by one and as a batch: ${failures} wrong or missing answers`);
process.exit(failures ? 1 : 0);
