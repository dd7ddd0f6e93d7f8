#pragma once
/// @file diagnostics.h
/// A last word when a plugin takes the process down. Kiln marks every kernel call,
/// so that a crash, an exit or a hang inside a plugin can say which kernel on which
/// device it happened in, instead of a bare "Segmentation fault" or nothing at all:
///
///   - exit() called inside a kernel: Kiln logs it (level error) as the process ends;
///   - a fatal signal: install_crash_reporter() writes one line before the process
///     dies of it;
///   - a hang: a watchdog (kiln-train's --watchdog) prints kernels_in_flight().

#include <string>
#include <vector>

namespace kiln {

/// Installs, once per process, handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and
/// SIGABRT that write one line to stderr, e.g.
///   kiln: fatal signal SIGSEGV in the kernel kiln.conv2d on acme:0
/// (or "outside any plugin kernel"), then let the signal do what it did before: a
/// handler installed earlier runs next, else the default action (the process dies of
/// the signal, with its core dump). Only async-signal-safe calls run in the handler.
/// The calling thread gets an alternate signal stack, so that its stack overflowing
/// is reported too; on other threads an overflow dies without the line.
void install_crash_reporter();

/// The kernel each thread is running inside a plugin, e.g. "kiln.conv2d on cuda:0"
/// ("an op outside the catalogue on acme:0" for a plugin-defined one); empty when no
/// thread is inside a kernel. Safe to call from any thread, at any time.
std::vector<std::string> kernels_in_flight();

}  // namespace kiln
