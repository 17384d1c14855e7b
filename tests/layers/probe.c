/* A source file of some layer that includes one header: tests/layers/CMakeLists.txt
 * compiles it once per probe, with VF_PROBE_HEADER naming the header, as a
 * member of the probe's layer would, and expects it to build only when the
 * header is that layer's own or a layer's beneath it. */
#include VF_PROBE_HEADER

int layer_probe(void);
int layer_probe(void)
{
    return 0;
}
