"""Fit recall's relevance judge (`memory.archive.relevance`) on dev data, and freeze it.

The judge is a logistic probe over the packaged local model's query embedding
(`memory.archive.embedding.LocalEmbeddings`) of a message's first `QUERY_CHARS`: does a
message ask for the user's past, or is it a request about the world? Its data is dev:
- asks (1): the questions of the long archive's dev threads (`evals/archives/dev`), of
  the two-person dev dialogues (`evals/dialogues/dev`), and RealMem's dev query turns
  (`../shared/data/realmem-dev`, `REALMEM_DIR`);
- does not (0): the dev off-topic probes (`evals/offtopic/dev.jsonl`);
- both: `evals/relevance_examples.jsonl`, short questions written for the judge in pairs
  of a kind: about the user's own world now ("Where do I live?", "我女儿几岁了？"),
  which the dev sets hardly hold (their questions ask what was said), and about the
  world ("How old is the universe?"). No test's message is among them.
Each text is also seen as a user types it in other styles (lower case without a final
stop; a capital and a final stop): the dev probes are lower case, and the judge must not
learn that. Each source's texts of each label weigh the same, and those that do not ask
weigh as much as those that do.

The threshold is where the judge, cross-validated (5 folds, 3 times), lets through
`PROBES_PASSED` of the off-topic probes; the weights are then fitted on all of it. The
held-out splits are not read. Writes `memory/archive/relevance_judge.json` (the weights,
the figures of the cross-validation, the data's checksums).

Run: `python -m evals.relevance_fit [--out FILE]` (a few minutes: every text is embedded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evals.dialogue import DIALOGUE_DIR
from evals.realmem import DATA_DIR, DATA_ENV
from evals.realmem_data import load_persona, persona_files
from evals.threads import ARCHIVE_DIR, OFFTOPIC_DIR, load_probes
from memory.archive.embedding import LOCAL_MODEL, QUERY_CHARS, LocalEmbeddings
from memory.archive.relevance import JUDGE_PATH
from memory.text import clamp

PROBES_PASSED = 0.06
"""The share of the dev off-topic probes the judge lets through, cross-validated: recall
then decides on what the archive holds (`memory.archive.archive.Archive.recall`)."""
PENALTY = 1e-3
"""L2 penalty on the weights (on vectors scaled by `SCALE`): cross-validated on dev, 3e-4
to 3e-3 gave the same figures within a point."""
SCALE = 10.0
"""The unit vectors are scaled so that gradient descent converges in `STEPS`."""
EXAMPLES = Path(__file__).with_name("relevance_examples.jsonl")
STEPS = 4000
RATE = 0.5
FOLDS = 5
REPEATS = 3


def _styles(text: str) -> list[str]:
    """`text` as typed, in lower case without a final stop, and with a capital and one."""
    bare = text.strip().rstrip(".?!。？！")
    lower = bare.lower()
    upper = bare[:1].upper() + bare[1:] + ("?" if text.rstrip().endswith(("?", "？")) else ".")
    return list(dict.fromkeys((text, lower, upper)))


def dev_texts(realmem: Path) -> tuple[list[tuple[str, str, int]], dict[str, str]]:
    """(source, text, label) of every dev text, and the sha256 of each file read."""
    rows: list[tuple[str, str, int]] = []
    sums: dict[str, str] = {}
    for source, directory in (("archive", ARCHIVE_DIR / "dev"), ("dialogue", DIALOGUE_DIR / "dev")):
        for path in sorted(directory.glob("*.json")):
            sums[f"{source}/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
            document = json.loads(path.read_text(encoding="utf-8"))
            rows.extend((source, q["question"], 1) for q in document.get("questions", ()))
    for path in persona_files(realmem):
        sums[f"realmem/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        persona = load_persona(path)
        rows.extend(
            ("realmem", line.text, 1)
            for session in persona.sessions
            for line in session.lines
            if line.query is not None
        )
    probes = OFFTOPIC_DIR / "dev.jsonl"
    sums[f"offtopic/{probes.name}"] = hashlib.sha256(probes.read_bytes()).hexdigest()
    rows.extend(("offtopic", probe.text, 0) for probe in load_probes("dev"))
    sums[EXAMPLES.name] = hashlib.sha256(EXAMPLES.read_bytes()).hexdigest()
    for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
        example = json.loads(line)
        rows.append(("examples", example["text"], int(example["asks"])))
    return rows, sums


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by gradient descent: (weights, bias)."""
    w = np.zeros(x.shape[1])
    b = 0.0
    weight = weight / weight.mean()
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = (p - y) * weight
        w -= RATE * (x.T @ g / len(y) + PENALTY * w)
        b -= RATE * float(g.mean())
    return w, b


def _weights(sources: np.ndarray, y: np.ndarray) -> np.ndarray:
    groups = list(zip(sources.tolist(), y.tolist(), strict=True))
    count = {group: groups.count(group) for group in set(groups)}
    weight = np.array([1.0 / count[group] for group in groups])
    weight[y == 0] *= weight[y == 1].sum() / weight[y == 0].sum()
    return weight


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=JUDGE_PATH)
    parser.add_argument("--passed", type=float, default=PROBES_PASSED)
    parser.add_argument(
        "--cache", type=Path, help="a .json file of vectors by text: read, and written back"
    )
    args = parser.parse_args(argv)
    realmem = Path(os.environ.get(DATA_ENV) or DATA_DIR)
    if not persona_files(realmem):
        print(f"no RealMem personas in {realmem} (set {DATA_ENV})", file=sys.stderr)
        return 2
    rows, sums = dev_texts(realmem)
    model = LocalEmbeddings()
    group, sources, texts, labels = [], [], [], []
    for index, (source, text, label) in enumerate(rows):
        for styled in _styles(text):
            group.append(index)
            sources.append(source)
            texts.append(styled)
            labels.append(label)
    cache: dict[str, list[float]] = {}
    if args.cache and args.cache.exists():
        cache = json.loads(args.cache.read_text(encoding="utf-8"))
    owed = [t for t in dict.fromkeys(texts) if t not in cache]
    print(f"embedding {len(owed)} of {len(texts)} texts ...", file=sys.stderr)
    cache.update((t, model.embed_query(clamp(t, QUERY_CHARS))) for t in owed)
    if args.cache:
        args.cache.write_text(json.dumps(cache), encoding="utf-8")
    x = SCALE * np.array([cache[t] for t in texts])
    y = np.array(labels, dtype=float)
    source_of = np.array(sources)
    groups = np.array(group)
    weight = _weights(source_of, y)
    # cross-validated scores of each text as typed (its styles share its fold)
    scores = np.zeros(len(rows))
    rng = np.random.default_rng(0)
    for _ in range(REPEATS):
        fold = rng.integers(0, FOLDS, len(rows))[groups]
        for k in range(FOLDS):
            train = fold != k
            w, b = fit(x[train], y[train], weight[train])
            scores += np.bincount(groups[~train], x[~train] @ w + b, len(rows)) / REPEATS
    first = np.unique(groups, return_index=True)[1]
    row_source = source_of[first]
    negatives = np.sort(scores[row_source == "offtopic"])
    threshold = float(negatives[int(np.ceil((1 - args.passed) * len(negatives))) - 1]) + 1e-6
    row_y = y[first]
    passed = {
        f"{s} ({'asks' if label else 'does not'})": round(float((chosen >= threshold).mean()), 3)
        for s in sorted(set(row_source.tolist()))
        for label in (1, 0)
        if (chosen := scores[(row_source == s) & (row_y == label)]).size
    }
    w, b = fit(x, y, weight)
    judge = {
        "model": LOCAL_MODEL,
        "form": "asks when bias + weights . the unit query embedding ('query: ') >= threshold",
        "threshold": round(threshold, 4),
        "bias": round(b, 5),
        "weights": [round(float(v) * SCALE, 5) for v in w],
        "cross_validated_share_passed": passed,
        "fit": {"penalty": PENALTY, "probes_passed": args.passed, "texts": len(rows)},
        "data_sha256": sums,
    }
    args.out.write_text(json.dumps(judge, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"threshold": judge["threshold"], "passed": passed}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
