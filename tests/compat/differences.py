"""The reference framework's tests that do not pass against memorylab, each with its reason.

``conftest.py`` applies this list: a *deliberate difference* runs as a strict ``xfail`` (it must
still fail: if memorylab ever matches the reference there, the entry goes), and a test of the
*reference's internals* is skipped (it patches or reads swarms' private code, which memorylab
does not have). docs/migrating-from-swarms.md lists the same differences for users.
"""

from __future__ import annotations

DIFFERENCES: dict[str, str] = {
    # ContextCompressor
    "test_swarms_context_compressor.py::TestInit::test_default_values": (
        "summarizer_temperature defaults to 0.1, not None (the provider's default): summaries "
        "should be repeatable, since replays and comparisons read them again; "
        "summarizer_max_tokens defaults to 2000, not 4000 (the summary's budget, capped at half "
        "the trigger, so a summary never fills the window it frees)"
    ),
    "test_swarms_context_compressor.py::TestUsageRatioReusesMessageCounts::"
    "test_ratio_never_undercounts": (
        "count_history_tokens() (and so usage_ratio(agent)) counts the request the model is "
        "sent (to_messages(), OpenAI's count of a chat request), not the history string the "
        "reference sends: the trigger counts what the window holds (issue 38). The count is "
        "still exact and never undercounts what is sent: test_drop_in.py checks it"
    ),
    # Conversation
    "test_swarms_conversation.py::test_return_history_as_string": (
        "time_enabled defaults to True: the seed's history string carries timestamps, so the "
        "agent can answer 'when did I ask?' (pass time_enabled=False for the reference's string)"
    ),
    "test_swarms_conversation.py::test_return_messages_as_list": (
        "the reference's suite expects both strings (this test) and dicts "
        "(test_return_messages_as_list_returns_message_dicts); memorylab returns dicts, as the "
        "name promises, and the strings are return_messages_as_strings()"
    ),
    "test_swarms_conversation.py::test_compact_preserves_static_context": (
        "compact() starts the summary with '[Compressed Memory Summary]', so a preloaded "
        "summary is recognised as one (the reference leaves a plain compact() summary unmarked)"
    ),
    "test_swarms_conversation.py::test_compact_removes_raw_turns": (
        "compact() starts the summary with '[Compressed Memory Summary]' (as above)"
    ),
    "test_swarms_conversation.py::test_archive_filename_format": (
        "archives are named history_<UTC time>Z.md: the reference opens its own names (local "
        "time, no zone) for writing without checking, so it could overwrite one of ours"
    ),
}

INTERNALS: dict[str, str] = {
    **{
        f"test_swarms_context_compressor.py::TestSummarize::{name}": (
            "the reference's private _summarize() and its module-level litellm completion; "
            "memorylab calls models through its gateway (memorylab.llm)"
        )
        for name in (
            "test_raises_when_no_model_configured",
            "test_raises_when_agent_has_no_model_name_attr",
            "test_uses_summarizer_model_over_agent_model",
            "test_falls_back_to_agent_model_name",
            "test_passes_temperature_and_max_tokens",
            "test_messages_structure",
            "test_returns_response_content_unchanged",
        )
    },
    **{
        f"test_swarms_context_compressor.py::TestCompress::{name}": (
            "patches the reference's private _summarize(); the behaviour it checks (compact "
            "once, the prefix in MEMORY.md, the raw summary returned) is in test_drop_in.py"
        )
        for name in (
            "test_calls_summarize_with_full_history",
            "test_calls_compact_exactly_once",
            "test_compact_receives_preamble_wrapped_summary",
            "test_returns_raw_summary_without_preamble",
        )
    },
    "test_swarms_context_compressor.py::TestIntegration::"
    "test_compress_updates_memory_md_and_archives": (
        "patches the reference's private _summarize(); the same scenario runs with memorylab's "
        "summarizer in test_drop_in.py"
    ),
    "test_swarms_context_compressor.py::TestShouldCompressSkipsTokenizing::"
    "test_byte_size_bounds_the_real_token_count": (
        "the reference's private ContextCompressor._history_bytes and its tokenizer module"
    ),
    "test_swarms_context_compressor.py::TestUsageRatioReusesMessageCounts::"
    "test_second_check_tokenizes_only_the_new_message": (
        "patches the reference's tokenizer backend (swarms.utils.llm_backend); memorylab's "
        "running count is tested in test_drop_in.py"
    ),
    **{
        f"test_swarms_conversation.py::{name}": (
            "the reference's JSON conversation cache (autosave into conversations_dir, "
            "load_conversation, get_cache_stats, list_cached_conversations): memorylab's "
            "persistence is MEMORY.md; save_as_json/export write a save file on request"
        )
        for name in (
            "test_conversation_cache_creation",
            "test_conversation_cache_loading",
            "test_get_cache_stats",
            "test_list_cached_conversations",
        )
    },
}
