//! libFuzzer entry point for the `parse_validate` target (`scripts/fuzz parse_validate SECONDS`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lackpy_fuzz::parse_validate(data);
});
