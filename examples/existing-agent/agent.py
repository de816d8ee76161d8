"""The currency agent of agent.ts as a Python script, run by Rollout Studio as a command
(config-python.ts): one process per rollout, the dataset row as one JSON line on stdin, the
session's endpoint in OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL (what the `openai` package
reads), and the answer written to the file named by ROLLOUT_STUDIO_RESULT_FILE when it is set.

It calls Chat Completions with the standard library only (urllib, json), so it runs on any
Python 3 without installing anything; with the `openai` package the loop would be the same, with
`client.chat.completions.create` in place of `chat()`. Same prompt, tool and loop as agent.ts.
"""

import json
import os
import sys
import urllib.error
import urllib.request
from decimal import ROUND_HALF_UP, Context, Decimal

SYSTEM = "Use the exchange tool to convert money, then reply with <answer>the amount</answer>."

# Today's rates: units of each currency per US dollar.
RATES = {
    "USD": 1,
    "EUR": 0.9215,
    "GBP": 0.7871,
    "JPY": 151.37,
    "CHF": 0.8823,
    "CAD": 1.3642,
    "AUD": 1.5208,
}
CURRENCIES = list(RATES)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "exchange",
            "description": "Convert an amount of money from one currency to another at today's rate.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number", "description": "How much money"},
                    "from": {"type": "string", "enum": CURRENCIES, "description": "The currency the amount is in"},
                    "to": {"type": "string", "enum": CURRENCIES, "description": "The currency to convert to"},
                },
                "required": ["amount", "from", "to"],
            },
        },
    }
]


def exchange(args):
    if args["from"] not in RATES or args["to"] not in RATES:
        return f"Error: unknown currency {args['from']} or {args['to']}"
    value = args["amount"] / RATES[args["from"]] * RATES[args["to"]]
    # JavaScript's toFixed(2), as agent.ts writes the result: halves round away from zero, where
    # Python's own formatting would round them to even; from 1e21 on toFixed writes the number as
    # JavaScript prints it (2.35e+43), as repr does. A model can ask for such amounts.
    if abs(value) >= 1e21:
        return repr(value)
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP, context=Context(prec=60)))


def question(row):
    """The question of a dataset row: its last user message."""
    users = [m for m in row["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else None
    return content if isinstance(content, str) else ""


def chat(messages):
    """One Chat Completions request; an error answer is logged with its body (where the reason is)."""
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        print(f"chat completion failed: HTTP {error.code}: {error.read().decode(errors='replace')}", file=sys.stderr)
        raise SystemExit(1)


def run(row):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question(row)}]
    for _ in range(3):
        message = chat(messages)["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return message.get("content") or ""
        for call in message["tool_calls"]:
            if call.get("type", "function") != "function":
                continue
            function = call["function"]
            if function["name"] == "exchange":
                result = exchange(json.loads(function["arguments"]))
            else:
                result = "Error: no such tool"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return ""


def main():
    answer = run(json.loads(sys.stdin.readline()))
    result_file = os.environ.get("ROLLOUT_STUDIO_RESULT_FILE")
    if result_file:
        with open(result_file, "w") as f:
            json.dump({"answer": answer}, f)
    else:
        print(answer)


if __name__ == "__main__":
    main()
