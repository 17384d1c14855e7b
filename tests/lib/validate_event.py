#!/usr/bin/env python3
"""Check an event body against schema/event.json (docs/contracts.md, Events).

Integration tests call this on events the worker really published, so a
drift between the programs and the published contract fails a test.

As a module (tests/lib on sys.path):
    from validate_event import event_errors, check_event
    errors = event_errors(body, routing_key="event.task.completed", message_id="evt_...")
    check_event(body, ...)          # raises EventInvalid listing every error

`body` may be bytes, str or an already decoded dict. Beyond the schema, the
timestamp must be a real UTC date and time, the routing key (when given) must
be "event.<type>" and the AMQP message_id (when given) must equal the id.

As a command:
    validate_event.py [--routing-key KEY] [--message-id ID] [--schema FILE] FILE|-
prints "ok: <type> <id>" and exits 0, or prints each error and exits 1
(2 for usage errors and unreadable input).

Needs python3-jsonschema (tests/lib/packages.sh). When the interpreter on
PATH lacks it, the command re-runs itself with Debian's /usr/bin/python3.
"""
import argparse
import datetime
import json
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
DEFAULT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schema",
                              "event.json")

try:
    import jsonschema
except ImportError:  # handled in main() for the command, raised for importers
    jsonschema = None


class EventInvalid(ValueError):
    """An event body that breaks the contract; str() lists every error."""

    def __init__(self, errors):
        super().__init__("; ".join(errors))
        self.errors = errors


_validators = {}


def _validator(schema_path):
    if jsonschema is None:
        raise ImportError("validate_event needs the Debian package python3-jsonschema "
                          "(listed in tests/lib/packages.sh)")
    path = os.path.abspath(schema_path or DEFAULT_SCHEMA)
    if path not in _validators:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        _validators[path] = jsonschema.Draft202012Validator(schema)
    return _validators[path]


def _where(error):
    return "/".join(str(p) for p in error.absolute_path) or "(body)"


def event_errors(body, routing_key=None, message_id=None, schema_path=None):
    """Every way `body` breaks the event contract, as readable lines; [] when valid."""
    if isinstance(body, (bytes, bytearray)):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as e:
            return ["body is not UTF-8: %s" % e]
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except json.JSONDecodeError as e:
            return ["body is not JSON: %s" % e]
    validator = _validator(schema_path)
    errors = ["%s: %s" % (_where(e), e.message)
              for e in sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))]
    if not isinstance(body, dict):
        return errors
    stamp = body.get("timestamp")
    if isinstance(stamp, str) and stamp.endswith("Z"):
        try:
            # fromisoformat in 3.11 reads "Z"; the schema's pattern already fixed the shape,
            # this catches impossible dates such as 2026-02-30.
            datetime.datetime.fromisoformat(stamp[:-1] + "+00:00")
        except ValueError as e:
            errors.append("timestamp: %r is not a real date and time: %s" % (stamp, e))
    event_type = body.get("type")
    if routing_key is not None and isinstance(event_type, str):
        if routing_key != "event." + event_type:
            errors.append("routing key %r does not match type %r (expected %r)"
                          % (routing_key, event_type, "event." + event_type))
    if message_id is not None and message_id != body.get("id"):
        errors.append("AMQP message_id %r differs from the event id %r" % (message_id, body.get("id")))
    return errors


def check_event(body, routing_key=None, message_id=None, schema_path=None):
    """Return the decoded event, or raise EventInvalid."""
    errors = event_errors(body, routing_key, message_id, schema_path)
    if errors:
        raise EventInvalid(errors)
    return json.loads(body) if isinstance(body, (str, bytes, bytearray)) else body


def main(argv):
    if jsonschema is None:
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and \
                os.access(SYSTEM_PYTHON, os.X_OK):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + argv)
        print("validate_event: python3-jsonschema is not installed (tests/lib/packages.sh)",
              file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description="Validate an event body against schema/event.json")
    parser.add_argument("file", help="event JSON file, or - for standard input")
    parser.add_argument("--routing-key", help="the AMQP routing key it was published with")
    parser.add_argument("--message-id", help="the AMQP message_id it was published with")
    parser.add_argument("--schema", help="schema file (default: the repository's schema/event.json)")
    args = parser.parse_args(argv)
    try:
        if args.file == "-":
            body = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                body = f.read()
    except OSError as e:
        print("validate_event: %s" % e, file=sys.stderr)
        return 2
    errors = event_errors(body, args.routing_key, args.message_id, args.schema)
    if errors:
        for line in errors:
            print("invalid: %s" % line)
        return 1
    event = json.loads(body)
    print("ok: %s %s" % (event["type"], event["id"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
