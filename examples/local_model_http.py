"""Point the OpenAI-compatible HTTP driver at a model server on this machine.

Any server that speaks ``POST /v1/chat/completions`` works; common defaults:

    Ollama             http://127.0.0.1:11434/v1   (ollama serve; ollama pull qwen2.5:7b)
    llama.cpp server   http://127.0.0.1:8080/v1    (llama-server -m model.gguf)
    vLLM               http://127.0.0.1:8000/v1    (vllm serve MODEL)
    LM Studio          http://127.0.0.1:1234/v1

    .venv/bin/python examples/local_model_http.py --base-url http://127.0.0.1:11434/v1 \\
        --model qwen2.5:7b

A local server reports no cost, so this example declares a price of zero per
token: the record then says the run cost $0 because you declared it, not
because a missing cost was taken as zero. For a hosted API, name the variable
holding the key (``--api-key-env OPENAI_API_KEY``) and declare its real prices,
or use a provider that reports cost itself (OpenRouter does).
"""

import argparse

import playproof
from playproof.drivers.openai import OpenAIDriver, Pricing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:11434/v1")
    parser.add_argument("--model", default="qwen2.5:7b")
    parser.add_argument("--api-key-env", default=None, help="name of the variable with the key")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--vision", action="store_true", help="send screen images when present")
    args = parser.parse_args()

    driver = OpenAIDriver(
        args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        pricing=Pricing(input_usd_per_mtok=0.0, output_usd_per_mtok=0.0),
        max_tokens=16,  # one word is enough; reasoning models need more
        temperature=0.0,
        timeout_s=120,
        vision=args.vision,
    )
    record = playproof.run("native/2048", driver, max_turns=args.turns, budget_usd=1.0)
    report = playproof.verify_record(record)
    print(f"{record.actor.id}: {record.score} milestones, stop={record.stop_reason.value}")
    print(f"replay verdict: {report.verdict}; driver health: {record.provenance.driver}")


if __name__ == "__main__":
    main()
