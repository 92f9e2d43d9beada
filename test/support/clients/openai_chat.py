"""The official `openai` Python SDK, unmodified, against the gateway's drop-in Chat Completions endpoint (issue #12).

A conversation as a stateless client runs it: a plain completion, then the whole history again with a streamed
completion that asks for usage, then a tool round streamed without usage. Prints one JSON object with what the client
received, for test/integration/dropin/pythonClients.test.ts to check against the store and the fake upstream.
"""

import json
import sys

from openai import OpenAI


def main() -> None:
    base_url, api_key, conversation_id = sys.argv[1], sys.argv[2], sys.argv[3]
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                    default_headers={"x-conversation-id": conversation_id})
    history = [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name a prime number."},
    ]
    first = client.chat.completions.create(model="gpt-test", messages=history, temperature=0)
    history.append(first.choices[0].message.model_dump(exclude_none=True))
    history.append({"role": "user", "content": "Another one, streamed."})

    text, usage = "", None
    stream = client.chat.completions.create(
        model="gpt-test", messages=history, stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.prompt_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    history.append({"role": "assistant", "content": text})
    history.append({"role": "user", "content": "Look it up with the tool."})

    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    calls, usage_without_asking = {}, False
    for chunk in client.chat.completions.create(model="gpt-test", messages=history, tools=tools, stream=True):
        if chunk.usage is not None:
            usage_without_asking = True
        for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            entry = calls.setdefault(call.index, {"id": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            entry["arguments"] += (call.function.arguments or "") if call.function else ""

    error = None
    try:
        client.chat.completions.create(model="gpt-test", messages=[])
    except Exception as exc:  # the SDK's typed error, as a client sees it
        error = {"class": type(exc).__name__, "status": getattr(exc, "status_code", None),
                 "param": getattr(exc, "param", None), "type": getattr(exc, "type", None)}

    print(json.dumps({
        "first": first.choices[0].message.content,
        "streamed": text,
        "streamed_usage": usage,
        "tool_calls": [calls[i] for i in sorted(calls)],
        "usage_without_asking": usage_without_asking,
        "error": error,
    }))


if __name__ == "__main__":
    main()
