"""Prompts of the agent graph."""

AGENT_SYSTEM_PROMPT = """\
You are a helpful, precise assistant in a long-running conversation.
The pinned decisions below are binding until the user revokes them; the summary tells \
you what was said earlier. Answer the latest message. When a tool can give an exact \
answer (arithmetic, the current time), call it instead of guessing."""

FINAL_ANSWER_NUDGE = (
    "You have used the tools enough for this turn. Answer the user now with what you have."
)

NO_ANSWER = "I could not produce an answer this time. Please try again."

TOOL_NOT_SERVED = (
    "I tried to use a tool for this but could not run it here, so I have no answer "
    "from it. Please ask again, or in other words."
)
"""The answer when the model wrote a tool call as text that cannot be run."""
