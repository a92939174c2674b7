#!/usr/bin/env python3
"""Send Sudoku puzzles to sudokud workers over RabbitMQ and check the answers.

Written from the wire protocol (docs/protocol.md) alone, with pika:

    pip install pika
    python3 client.py [PUZZLE_FILE]

Each puzzle goes out as its own job, then all of them again as one batch
job, plus one job that is invalid on purpose. Answers come back on a
private reply queue and are matched by correlation_id. Exits 0 when every
answer is right, 1 otherwise. Settings from the environment: AMQP_URL
(default amqp://guest:guest@127.0.0.1:5672/%2f), SUDOKUD_JOBS_QUEUE
(default sudoku.jobs), SUDOKUD_TIMEOUT (seconds, default 60).
"""
import json
import os
import sys
import uuid

import pika

URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
JOBS_QUEUE = os.environ.get("SUDOKUD_JOBS_QUEUE", "sudoku.jobs")
TIMEOUT = float(os.environ.get("SUDOKUD_TIMEOUT", "60"))
SAMPLE = [
    # The example puzzle of Wikipedia's "Sudoku" article: singles only.
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79",
    # Arto Inkala's 2010 puzzle, published as the world's hardest.
    "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
]


def is_solution(solution, puzzle):
    """A full grid, every row, column and box 1-9, every given kept."""
    if not isinstance(solution, str) or len(solution) != 81:
        return False
    if any(p not in ".0" and p != s for p, s in zip(puzzle, solution)):
        return False
    units = [[r * 9 + c for c in range(9)] for r in range(9)]
    units += [[r * 9 + c for r in range(9)] for c in range(9)]
    units += [[(b // 3 * 3 + i // 3) * 9 + b % 3 * 3 + i % 3 for i in range(9)] for b in range(9)]
    return all(sorted(solution[i] for i in unit) == list("123456789") for unit in units)


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            puzzles = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    else:
        puzzles = SAMPLE
    connection = pika.BlockingConnection(pika.URLParameters(URL))
    channel = connection.channel()
    channel.confirm_delivery()  # basic_publish now returns once the broker has the job
    replies = channel.queue_declare(queue="", exclusive=True, auto_delete=True).method.queue

    expected = {}  # correlation_id -> what the answer must be

    def send(job, check):
        correlation_id = str(uuid.uuid4())
        expected[correlation_id] = (job, check)
        properties = pika.BasicProperties(
            content_type="application/json",
            delivery_mode=pika.DeliveryMode.Persistent,
            reply_to=replies,
            correlation_id=correlation_id,
        )
        channel.basic_publish("", JOBS_QUEUE, json.dumps(job), properties, mandatory=True)

    for i, puzzle in enumerate(puzzles):
        send({"id": i, "puzzle": puzzle},
             lambda r, p=puzzle: r["status"] == "solved" and is_solution(r["solution"], p))
    send({"id": "batch", "puzzles": puzzles, "mode": "unique"},
         lambda r: len(r["results"]) == len(puzzles) and all(
             e["status"] == "solved" and e["unique"] and is_solution(e["solution"], p)
             for e, p in zip(r["results"], puzzles)))
    send({"id": "bad", "puzzle": "55" + "." * 79},
         lambda r: r["status"] == "invalid" and "row 1 has 5 twice" in r["error"])

    failures = 0
    for method, properties, body in channel.consume(replies, auto_ack=True, inactivity_timeout=TIMEOUT):
        if method is None:
            print(f"no answer within {TIMEOUT} s for {len(expected)} jobs", file=sys.stderr)
            failures += len(expected)
            break
        job, check = expected.pop(properties.correlation_id, (None, None))
        if job is None:
            continue  # an answer to a job sent twice, or not ours
        result = json.loads(body)
        try:
            right = result["id"] == job["id"] and check(result)
        except (KeyError, TypeError):  # a field missing, or of another type
            right = False
        if not right:
            print(f"wrong answer to job {job['id']}: {result}", file=sys.stderr)
            failures += 1
        if not expected:
            break
    connection.close()
    print(f"{len(puzzles)} puzzles, one by one and as a batch: {failures} wrong or missing answers")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
