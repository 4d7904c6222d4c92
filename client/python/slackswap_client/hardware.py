"""Hardware presets for modelled timings, the same as the C++ presets
(simulator/hardware.cc); a test checks them against the server's GenerateTrace."""

HARDWARE_PRESETS = {
    "titan-x": dict(d2h=12_000_000_000, h2d=12_000_000_000, latency_ns=10_000,
                    gpu_memory=12 << 30, matmul=4_600_000_000_000, hbm=280_000_000_000),
    "v100": dict(d2h=12_000_000_000, h2d=12_000_000_000, latency_ns=10_000,
                 gpu_memory=32 << 30, matmul=90_000_000_000_000, hbm=790_000_000_000),
    "a100": dict(d2h=25_000_000_000, h2d=25_000_000_000, latency_ns=10_000,
                 gpu_memory=80 << 30, matmul=220_000_000_000_000, hbm=1_800_000_000_000),
    "h100": dict(d2h=52_800_000_000, h2d=35_200_000_000, latency_ns=10_000,
                 gpu_memory=80 << 30, matmul=700_000_000_000_000, hbm=2_900_000_000_000),
    "gh200": dict(d2h=300_000_000_000, h2d=345_000_000_000, latency_ns=5_000,
                  gpu_memory=96 << 30, matmul=700_000_000_000_000, hbm=3_500_000_000_000),
}


def preset_name(name):
    """The preset's canonical name: case-insensitive; ValueError naming the
    valid ones otherwise."""
    if isinstance(name, str):
        key = name.strip().lower()
        if key in HARDWARE_PRESETS:
            return key
    raise ValueError(f"unknown hardware preset {name!r}; valid (any case): "
                     f"{', '.join(HARDWARE_PRESETS)}")


def preset(name):
    """The rates of a preset (see preset_name)."""
    return HARDWARE_PRESETS[preset_name(name)]


def hardware_proto(name):
    """The slackswap.v1.Hardware message of a preset (case-insensitive name)."""
    from . import stubs
    stubs.load()
    from slackswap.v1 import hardware_pb2
    name = preset_name(name)
    p = HARDWARE_PRESETS[name]
    return hardware_pb2.Hardware(
        name=name, d2h_bytes_per_second=p["d2h"], h2d_bytes_per_second=p["h2d"],
        transfer_latency_ns=p["latency_ns"], gpu_memory_bytes=p["gpu_memory"],
        matmul_flops_per_second=p["matmul"], hbm_bytes_per_second=p["hbm"])
