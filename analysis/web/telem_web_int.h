/* telem_web_int.h - private to analysis/web: the table of embedded files
 * that the build generates (embed.cmake writes telem_web_assets.c).
 */
#ifndef TELEM_WEB_INT_H
#define TELEM_WEB_INT_H

#include "telem_web.h"

/* One row per embedded file, in the order CMakeLists.txt lists them; the
 * page is "/index.html". */
extern const telem_web_asset_t telem_web_assets[];
extern const size_t telem_web_nassets;

#endif
