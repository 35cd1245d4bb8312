/* rlights.h — shoal's stand-in for raylib's lighting example header (rendering only). */
#ifndef SHOAL_OCEAN_RLIGHTS_H
#define SHOAL_OCEAN_RLIGHTS_H
#include "raylib.h"
#endif
