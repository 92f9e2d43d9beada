"""The official `anthropic` Python SDK, unmodified, against the gateway's drop-in Messages endpoint (issue #12).

A conversation as a stateless client runs it: a plain message, then the whole history again streamed, then a tool
round streamed, then count_tokens and a refusal. Prints one JSON object with what the client received, for
test/integration/dropin/pythonClients.test.ts to check against the store and the fake upstream.
"""

import json
import sys

import anthropic


def main() -> None:
    base_url, api_key, conversation_id = sys.argv[1], sys.argv[2], sys.argv[3]
    client = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0,
                                 default_headers={"x-conversation-id": conversation_id})
    model = "claude-sonnet-4-5"
    messages = [{"role": "user", "content": "Name a prime number."}]
    first = client.messages.create(model=model, max_tokens=64, system="Be terse.", messages=messages)
    messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]})
    messages.append({"role": "user", "content": "Another one, streamed."})

    with client.messages.stream(model=model, max_tokens=64, system="Be terse.", messages=messages) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in final.content]})
    messages.append({"role": "user", "content": "Look it up with the tool."})

    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    with client.messages.stream(model=model, max_tokens=64, system="Be terse.", messages=messages,
                                tools=tools) as stream:
        tool_message = stream.get_final_message()
    tool_use = [block.model_dump() for block in tool_message.content if block.type == "tool_use"]

    counted = client.messages.count_tokens(model=model, messages=[{"role": "user", "content": "count me"}])

    error = None
    try:
        client.messages.create(model=model, max_tokens=10, messages=[])
    except anthropic.APIStatusError as exc:  # the SDK's typed error, as a client sees it
        error = {"class": type(exc).__name__, "status": exc.status_code, "body": exc.body}

    print(json.dumps({
        "first": first.content[0].text,
        "streamed": streamed,
        "streamed_usage": final.usage.input_tokens,
        "tool_use": tool_use,
        "counted": counted.input_tokens,
        "error": error,
    }))


if __name__ == "__main__":
    main()
