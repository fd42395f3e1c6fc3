//! libFuzzer entry point for the `mcp_result` target (`scripts/fuzz mcp_result SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::mcp_result(data);
});
