// streams.h — streams and events of the CPU plugin.
//
// Every CPU kernel runs synchronously on the calling thread, so by the time an op
// returns its work is done: a stream is only a distinct handle, synchronizing returns
// at once, and an event is complete as soon as it is recorded. The functions still
// validate their handles so frontend bugs surface here as on an asynchronous backend.
#ifndef KILN_CPU_STREAMS_H
#define KILN_CPU_STREAMS_H

#include "kiln/c_api.h"

namespace kiln::cpu {

kiln_status* stream_create(kiln_device* device, kiln_stream** stream);
kiln_status* stream_destroy(kiln_device* device, kiln_stream* stream);
kiln_status* stream_synchronize(kiln_device* device, kiln_stream* stream);
kiln_status* event_create(kiln_device* device, kiln_event** event);
kiln_status* event_destroy(kiln_device* device, kiln_event* event);
kiln_status* event_record(kiln_device* device, kiln_event* event, kiln_stream* stream);
kiln_status* stream_wait_event(kiln_device* device, kiln_stream* stream, kiln_event* event);
kiln_status* event_synchronize(kiln_device* device, kiln_event* event);
/// Everything runs synchronously, so the device time between two events is the host
/// time between their event_record calls.
kiln_status* event_elapsed(kiln_device* device, kiln_event* start, kiln_event* end,
                           double* milliseconds);

}  // namespace kiln::cpu

#endif  // KILN_CPU_STREAMS_H
