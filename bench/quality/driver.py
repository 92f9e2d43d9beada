"""CompactBench 0.1.0 driver for `npm run bench:quality` (issue #15 §1).

Generates the practice suite's cases with compactbench's own engine, runs every case through its drift cycles
with compactbench's `execute_cycle` (compact -> evaluate -> score), and sends one record per cycle to the Node
parent. Compactors and the answerer live in the Node parent (bench/quality/*.ts): this process asks it over
JSON lines (requests on stdout, replies on stdin). Logs go to stderr.

Offline: compactbench counts tokens with tiktoken's cl100k_base, which it downloads on first use; the encoder is
replaced by a rough one (token figures of the report come from the Node side, SPEC §3 estimate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

import compactbench.scoring.compression as compression
from compactbench.compactors import Compactor
from compactbench.contracts import CompactionArtifact, StructuredState, Transcript
from compactbench.dsl import DifficultyLevel, load_suite, validate_template
from compactbench.engine import derive_case_seed, generate_case
from compactbench.providers import CompletionRequest, CompletionResponse, Provider
from compactbench.runner.cycle import execute_cycle
from compactbench.runner.evaluation import render_artifact_for_prompt
from compactbench.scoring.checks import run_check


class _RoughEncoder:
    def encode(self, text: str) -> list[int]:
        return [0] * math.ceil(len(text.encode()) / 4)


compression._ENCODER_CACHE["cl100k_base"] = _RoughEncoder()

_next_id = 0


def _ask(op: str, payload: dict[str, Any]) -> Any:
    global _next_id
    _next_id += 1
    sys.stdout.write(json.dumps({"id": _next_id, "op": op, **payload}) + "\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("node parent closed the pipe")
    reply = json.loads(line)
    if reply.get("error"):
        raise RuntimeError(reply["error"])
    return reply["result"]


def _tell(op: str, payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"id": 0, "op": op, **payload}) + "\n")
    sys.stdout.flush()


class NodeAnswerer(Provider):
    """The one deterministic answerer: the Node side answers from the artifact in the prompt only."""

    key = "node-answerer"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        text = _ask("answer", {"prompt": request.prompt})
        return CompletionResponse(text=text, prompt_tokens=0, completion_tokens=0, model=request.model)


def node_compactor(compactor_key: str) -> type[Compactor]:
    class NodeCompactor(Compactor):
        name = compactor_key
        version = "1"

        async def compact(
            self,
            transcript: Transcript,
            config: dict[str, Any] | None = None,
            previous_artifact: CompactionArtifact | None = None,
        ) -> CompactionArtifact:
            turns = [{"id": t.id, "role": t.role.value, "content": t.content} for t in transcript.turns]
            previous = previous_artifact.method_metadata if previous_artifact is not None else None
            result = _ask("compact", {"compactor": compactor_key, "turns": turns, "previous": previous})
            # model_construct: the keep-everything baseline may exceed the 8,000-character summary limit.
            return CompactionArtifact.model_construct(
                schema_version="1.0.0",
                summary_text=result["text"],
                structured_state=StructuredState(),
                selected_source_turn_ids=[],
                warnings=[],
                method_metadata=result["metadata"],
            )

    return NodeCompactor


PRESENCE_CHECKS = {"contains_normalized", "set_match", "exact"}


async def run_case(case: Any, compactor: Compactor, provider: Provider, drift_cycles: int, seed: int, meta: dict[str, Any]) -> None:
    transcript = case.transcript
    previous: CompactionArtifact | None = None
    for cycle in range(drift_cycles + 1):
        result = await execute_cycle(
            case=case,
            transcript=transcript,
            cycle_number=cycle,
            previous_artifact=previous,
            compactor=compactor,
            provider=provider,
            model="deterministic",
            case_seed=seed,
        )
        rendered = render_artifact_for_prompt(result.artifact)
        items = []
        for item, score in zip(case.evaluation_items, result.scorecard.item_scores, strict=True):
            check = str(item.expected.get("check"))
            kind = "presence" if check in PRESENCE_CHECKS else "absence"
            items.append({"kind": kind, "answer": score.score, "artifact": run_check(item.expected, rendered)})
        _tell(
            "record",
            {
                **meta,
                "caseId": case.case_id,
                "cycle": cycle,
                "items": items,
                "contradictionRate": result.scorecard.contradiction_rate,
                "tokens": result.artifact.method_metadata.get("tokens"),
            },
        )
        transcript = result.extended_transcript
        previous = result.artifact


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--benchmarks-dir", required=True)
    parser.add_argument("--suite", default="elite_practice")
    parser.add_argument("--difficulty", action="append", required=True)
    parser.add_argument("--compactor", action="append", required=True)
    parser.add_argument("--drift-cycles", type=int, default=2)
    parser.add_argument("--case-count", type=int, default=3)
    parser.add_argument("--seed-group", default="default")
    args = parser.parse_args()

    templates = load_suite(Path(args.benchmarks_dir) / args.suite)
    for template in templates:
        validate_template(template)
    versions = {t.version for t in templates}
    suite_version = next(iter(versions)) if len(versions) == 1 else "mixed"
    provider = NodeAnswerer()
    for difficulty in args.difficulty:
        level = DifficultyLevel(difficulty)
        for key in args.compactor:
            compactor_cls = node_compactor(key)
            for template in templates:
                for slot in range(args.case_count):
                    seed = derive_case_seed(f"{args.suite}@{suite_version}", args.seed_group, slot)
                    case = generate_case(template, seed, level)
                    meta = {"difficulty": difficulty, "compactor": key}
                    await run_case(case, compactor_cls(provider, "deterministic"), provider, args.drift_cycles, seed, meta)
    _tell("done", {})


if __name__ == "__main__":
    asyncio.run(main())
