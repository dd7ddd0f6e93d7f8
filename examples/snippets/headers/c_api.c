/* The example in kiln/c_api.h's comment, compiled as C (docs.header_snippets checks
 * that it is the header's, line for line). Compiled only, never run. */
#include <kiln/c_api.h>

void example(kiln_host_api host, size_t bytes, kiln_op_args args) {
  int32_t n = 0;
  kiln_device *dev = NULL;
  kiln_buffer *buf = NULL;
  void *ptr = NULL;
  kiln_kernel kernel;
  kernel.struct_size = sizeof(kiln_kernel);
  const kiln_plugin_api *api = NULL;
  kiln_status *s = kiln_plugin_init(&host, &api);     // negotiate versions
  api->device_count(api->context, &n);                 // enumerate
  api->device_open(api->context, 0, &dev);             // open lazily
  api->allocate(dev, bytes, 64, NULL, &buf, &ptr);     // memory
  api->get_kernel(dev, "kiln.add", 1, &kernel);        // look an op up once...
  kernel.run(kernel.context, &args);                   // ...call it many times
  (void)s;
}
