/* telem_collector.c - the telem_collector program: one collector with the
 * built-in kernels.  Everything is in telem_collector_cli.c, shared with
 * user programs that bring their own test function.
 */
#include "telem_collector.h"

int
main(int argc, char **argv)
{
    return telem_collector_main(argc, argv, NULL, NULL, NULL);
}
