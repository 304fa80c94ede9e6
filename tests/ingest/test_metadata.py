from __future__ import annotations

from rayweave.cluster.types import ContentType
from rayweave.ingest.metadata import (
    ErrorMention,
    chunk_metadata,
    extract_dependencies,
    extract_keywords,
    extract_references,
    find_errors,
)


class TestReferences:
    def test_links_of_every_markup(self) -> None:
        text = (
            'See [leases](concepts/leases.md "Leases") and <https://example.com/x>.\n'
            "[ref]: ../faq.md\n"
            "RST: `the guide <https://docs.example.com/g>`_ and :doc:`configuration`, "
            ":func:`~ferry.task.dumps`.\n"
            'HTML: <a href="workers.html">workers</a>. Bare https://pypi.org/project/ferry-queue/.\n'
            "Code: call `Worker.run()` or `ferry.Ferry`; not `pip install x` or `42`."
        )
        refs = extract_references(text)
        assert refs[:2] == ("concepts/leases.md", "../faq.md")
        for expected in (
            "https://example.com/x",
            "https://docs.example.com/g",
            "configuration",
            "ferry.task.dumps",
            "workers.html",
            "https://pypi.org/project/ferry-queue/",
            "Worker.run",
            "ferry.Ferry",
        ):
            assert expected in refs, expected
        assert "pip install x" not in refs
        assert "42" not in refs

    def test_images_are_not_links(self) -> None:
        assert extract_references("![diagram](images/a.png)") == ()


class TestDependencies:
    def test_imports_in_many_languages(self) -> None:
        text = (
            "import os, json\nfrom ferry.errors import Reject\nimport x from 'lodash';\n"
            'const fs = require("fs");\nuse std::collections::HashMap;\n#include <stdio.h>\n'
            'import (\n  "fmt"\n  "net/http"\n)\n'
        )
        deps = extract_dependencies(text)
        for expected in (
            "os",
            "json",
            "ferry.errors",
            "lodash",
            "fs",
            "std::collections::HashMap",
            "stdio.h",
            "fmt",
            "net/http",
        ):
            assert expected in deps, expected

    def test_install_commands(self) -> None:
        text = (
            'pip install -U "ferry-queue[redis]>=2.3" requests && echo ok\n'
            "npm install --save left-pad\ncargo add serde"
        )
        deps = extract_dependencies(text)
        assert {"ferry-queue", "requests", "left-pad", "serde"} <= set(deps)
        assert "echo" not in deps


class TestErrors:
    def test_codes_and_messages(self) -> None:
        text = (
            "E1003 LeaseExpiredError: lease of task 01HV expired\n"
            "error[E0382]: borrow of moved value\n"
            "ERR_CONNECTION_REFUSED, then ENOENT and HTTP 503, or 404 Not Found.\n"
            "TS2345 in the compiler, ORA-00942 in Oracle.\n"
            'Traceback (most recent call last):\n  File "x.py", line 1\nQueueEmpty: no task\n'
        )
        found = find_errors(text)
        codes = [e.code for e in found]
        for expected in (
            "E1003",
            "LeaseExpiredError",
            "E0382",
            "ERR_CONNECTION_REFUSED",
            "ENOENT",
            "HTTP 503",
            "HTTP 404",
            "TS2345",
            "ORA-00942",
            "QueueEmpty",
        ):
            assert expected in codes, expected
        assert ErrorMention("LeaseExpiredError", "lease of task 01HV expired") in found
        assert ErrorMention("QueueEmpty", "no task") in found
        assert codes.index("E1003") < codes.index("E0382")  # order of appearance

    def test_no_false_positives_on_common_tokens(self) -> None:
        text = (
            "Use SHA256 and UTF-8 over HTTP/2 with ISO8601 dates on an A100 GPU (RFC 7234, PEP8)."
        )
        assert find_errors(text) == []


class TestKeywords:
    def test_repeated_multiword_phrases_rank_first(self) -> None:
        text = (
            "The dead-letter queue holds tasks that used all attempts. "
            "Requeue tasks from the dead-letter "
            "queue after fixing the bug. The retry policy decides attempts."
        )
        keywords = extract_keywords(text, top_k=4)
        assert keywords == ("dead-letter queue", "tasks", "attempts", "retry policy decides")
        assert extract_keywords(text, top_k=4) == keywords  # deterministic

    def test_code_keywords_are_identifier_words(self) -> None:
        code = (
            "def renew_lease(lease):\n    broker.renew(lease, seconds)\n    heartbeatCount += 1\n"
        )
        kws = extract_keywords(code, code=True, top_k=6)
        assert set(kws[:2]) == {"renew", "lease"}
        assert "heartbeat" in kws

    def test_empty(self) -> None:
        assert extract_keywords("") == ()
        assert extract_keywords("the of and") == ()


def test_chunk_metadata_for_code_skips_prose_links() -> None:
    meta = chunk_metadata(
        "import os\nraise ValueError('bad')", content_type=ContentType.CODE, language="python"
    )
    assert meta.references == ()
    assert meta.dependencies == ("os",)
    assert meta.error_codes == ("ValueError",)
