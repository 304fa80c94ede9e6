from __future__ import annotations

import pytest

from rayweave.serve.classifier import classify_query, keywords
from rayweave.serve.schemas import ContentScope, QueryType

# Realistic questions about software documentation and code, written with their expected types
# before the rules were last changed (issue 18): the question's form comes first, so error words
# in a how-to question do not make it an error question.
# How-to: the question's form decides, whatever error words it carries.
HOW_TO = [
    "How do I retry a failed task?",
    "How do I configure retries for failed tasks?",
    "How can I run a task every five minutes?",
    "How to install the worker on Kubernetes",
    "How should I handle tasks that fail because the broker is down?",
    "How do I keep a worker from crashing when Redis restarts?",
    "How do I test tasks without running a broker or a worker?",
    "How do I requeue dead tasks after fixing the bug?",
    "What's the best way to limit a task to ten runs per minute?",
    "Is there a way to cancel a task that is already running?",
    "Steps to migrate an app from Celery to Ferry",
    "how to raise a number to a power in python 3",
    "How can I avoid charging a card twice when a worker fails mid-task?",
    "Configure TLS for the Redis broker",
    "How do I raise a custom exception inside a task?",
    "How do I tell Ferry not to retry on ValueError?",
]
WHAT_IS = [
    "What is a dead-letter queue?",
    "What is a lease in Ferry?",
    "What does the prefetch setting of a worker do?",
    "What are idempotency keys used for?",
    "Explain the full jitter backoff of the retry policy",
    "Define visibility timeout",
    "What is TaskNotRegisteredError?",
    "What does the --prefetch flag of ferry worker mean?",
    "What is the default value of lease_seconds?",
]
WHY = [
    "Why does the scheduler back off exponentially?",
    "Why can a Ferry task run more than once?",
    "Why did Ferry 2.0 replace acknowledgement deadlines with leases?",
    "Why does a task fail when its lease expires?",
    "Why do workers crash when the broker restarts?",
    "What causes tasks to stay pending forever?",
    "Why is prefetch set to 1 by default?",
]
# Error: an error message, or a question whose object is a named error (code or exception class).
ERROR = [
    "TQ-1042 when enqueueing a job",
    "E1003 LeaseExpiredError in my worker logs, what does it mean and how do I fix it?",
    "TaskNotRegisteredError: no task named billing.tasks.charge in this worker",
    "How do I fix E1004 TaskNotRegisteredError?",
    "How can I resolve QueueFullError in the producer?",
    "Why do I get E1002 SerializationError when passing a datetime?",
    'Traceback (most recent call last): File "worker.py", line 12, in run',
    "worker crashes on startup with exit code 3",
    "redis connection refused error after upgrading to 2.1",
    "ConnectionResetError while publishing to the queue",
    "task keeps failing with serialization error",
    "ERR_BROKER_TIMEOUT",
    "ferry worker not working after upgrade",
]
CODE = [
    "python check if a variable is iterable",
    "parse_config() return value",
    "Which function picks the broker class from the broker URL scheme?",
    "RetryPolicy.delay implementation",
    "python read a file line by line",
    "def should_retry(self, error, attempt)",
    "sort a dict by value python",
    "javascript debounce function example",
    "convert list[int] to a comma separated string",
]
COMPARISON = [
    "What is the difference between a queue and a topic?",
    "Are Joe Elliott and Paul Meany both keyboardists?",
    "SQLite broker versus Redis broker: when should I use which?",
    "Should I use Ferry or Celery if I need task chains and chords?",
    "Redis vs SQLite broker for a single machine",
    "How does Ferry compare to Celery for scheduled tasks?",
    "Who was born earlier, Thomas Wolfe or Margaret Wilson?",
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    "Is the Redis broker faster than the SQLite broker?",
]
# HotpotQA and MuSiQue style: a question about an entity reached through another one.
MULTI_HOP = [
    "What provinces comprise the area where the 1944 San Juan earthquake took place?",
    "Who is the spouse of the performer of Green?",
    "What county is the city where Alan Turing was born in?",
    "What is the seat of the county where Van Hook Township is located?",
    "Who is the father of Edward Baring, 1st Baron Revelstoke's father?",
    "What team was Anna Benson's husband on?",
    "What was the nickname of the winner of the Men's Singles title during the 1998 "
    "Wimbledon Championships?",
    "What happens to a task whose lease expires during its last attempt?",
    "What year was the man whose car failed to arrive to the 1950 Indianapolis 500 first the "
    "Italian champion?",
    "When was the institution where the author of The Hobbit taught founded?",
    "Which pip extra do I need for the broker that supports Redis Cluster, and since which "
    "version is Cluster supported?",
]
GENERAL = [
    "tide tables",
    "ferry release notes",
    "broker",
    "leases and heartbeats",
    "Ferry 2.0 changelog",
]

TABLE = [
    *((q, QueryType.HOW_TO) for q in HOW_TO),
    *((q, QueryType.WHAT_IS) for q in WHAT_IS),
    *((q, QueryType.WHY) for q in WHY),
    *((q, QueryType.ERROR) for q in ERROR),
    *((q, QueryType.CODE) for q in CODE),
    *((q, QueryType.COMPARISON) for q in COMPARISON),
    *((q, QueryType.MULTI_HOP) for q in MULTI_HOP),
    *((q, QueryType.GENERAL) for q in GENERAL),
]


def test_the_table_covers_every_type_with_sixty_questions_or_more() -> None:
    assert len(TABLE) >= 60
    assert {t for _, t in TABLE} == set(QueryType)


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[q[:60] for q, _ in TABLE])
def test_question_table(text: str, expected: QueryType) -> None:
    assert classify_query(text).query_type is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("How do I configure retries for failed tasks?", QueryType.HOW_TO),
        ("TQ-1042 when enqueueing a job", QueryType.ERROR),
        ("Why does the scheduler back off exponentially?", QueryType.WHY),
        ("How do I install the worker on Kubernetes?", QueryType.HOW_TO),
        ("What is a dead-letter queue?", QueryType.WHAT_IS),
        ("What is the difference between a queue and a topic?", QueryType.COMPARISON),
        ("Are Joe Elliott and Paul Meany both keyboardists?", QueryType.COMPARISON),
        ("python check if a variable is iterable", QueryType.CODE),
        ("parse_config() return value", QueryType.CODE),
        (
            "What provinces comprise the area where the 1944 San Juan earthquake took place?",
            QueryType.MULTI_HOP,
        ),
        ("tide tables", QueryType.GENERAL),
    ],
)
def test_query_types(text: str, expected: QueryType) -> None:
    assert classify_query(text).query_type is expected


def test_scope_is_code_for_code_queries_and_docs_otherwise() -> None:
    assert classify_query("python read a file line by line").scope is ContentScope.CODE
    assert classify_query("What is a dead-letter queue?").scope is ContentScope.DOCS


@pytest.mark.parametrize(
    ("text", "web_phrased"),
    [
        ("python read a file line by line", True),
        ("how to sort a dict by value in python", True),
        ("Return the number of items in the queue as an int", False),  # the author's words
        ("parse_args() returns None", False),
        ("How do I configure retries?", False),  # a docs question keeps its weights
        # Code scope by its ';', asked in prose: not a web search.
        ("My worker crashed mid-charge; how do I make sure nobody is charged twice?", False),
    ],
)
def test_only_a_code_question_phrased_for_a_web_search_is_web_phrased(
    text: str, web_phrased: bool
) -> None:
    assert classify_query(text).web_phrased is web_phrased


@pytest.mark.parametrize(
    "text",
    [
        "How do I fix E1004 TaskNotRegisteredError?",
        "TaskNotRegisteredError: no task named billing.tasks.charge in this worker",
    ],
)
def test_an_exception_name_alone_does_not_make_a_question_about_code(text: str) -> None:
    # The troubleshooting page answers these; code-scope weights mute its lexical and graph votes.
    assert classify_query(text).scope is ContentScope.DOCS


def test_keywords_keep_capitalised_phrases_and_drop_stopwords() -> None:
    kws = keywords("Who directed the film that starred Paul Meany and Joe Elliott?")
    assert "Paul Meany" in kws
    assert "Joe Elliott" in kws
    assert "the" not in [k.casefold() for k in kws]
