"""Who the processes are: simulated devices now; resolvers and initialize() later."""

from ._cpu import CPU_DEVICES_ENV as CPU_DEVICES_ENV
from ._cpu import cpu_device_count_from_env as cpu_device_count_from_env
from ._cpu import set_cpu_device_count as set_cpu_device_count

__all__ = ["CPU_DEVICES_ENV", "cpu_device_count_from_env", "set_cpu_device_count"]
