"""The ``datapipe`` command line."""

from __future__ import annotations

import argparse
import logging
import sys

from datapipe.errors import DatapipeError, describe_error, user_error


def _cmd_run(args: argparse.Namespace) -> int:
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    job = load_job(args.job, output=args.output)
    try:
        run_job(job, force=args.force)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: run_job said how to resume
        return 130
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from datapipe.plan import compile_plan, describe_plan
    from datapipe.spec import load_job

    job = load_job(args.job, output=args.output)
    print("\n".join(describe_plan(compile_plan(job))))
    print(f"spec OK (spec hash {job.spec_hash()})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="datapipe", description="Pretraining data pipelines on Ray Data.")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="debug logging, and Ray's own logs and progress bars on the console (else in <output>/logs/ray.log)")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a job spec (embedded local Ray, or the cluster in RAY_ADDRESS)")
    r.add_argument("job", help="job spec YAML, e.g. jobs/sample.yaml")
    r.add_argument("--output", help="override the spec's output folder")
    r.add_argument("--force", action="store_true", help="run again even if the output is complete")
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="check a job spec without running it and print the plan")
    v.add_argument("job")
    v.add_argument("--output", help="override the spec's output folder")
    v.set_defaults(func=_cmd_validate)

    from datapipe.estimate import add_cli as add_estimate_cli
    from datapipe.inspect_rejects import add_cli as add_inspect_cli
    from datapipe.plugins import add_plugin_cli

    add_inspect_cli(sub)
    add_estimate_cli(sub)
    add_plugin_cli(sub)   # shards, tokenizer, quality, lm (stages); mix (trainer_bridge)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
    except DatapipeError as e:   # a plugin that fails to import: one line naming it
        print(f"datapipe: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except Exception as e:  # noqa: BLE001 - one clear line instead of a traceback
        cause = user_error(e)
        if cause is None:
            raise
        print(f"datapipe: error: {describe_error(cause)}", file=sys.stderr)
        if args.verbose:
            logging.getLogger(__name__).debug("full error", exc_info=e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
