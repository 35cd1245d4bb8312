/* rlights.h — shoal's stand-in for raylib's lighting example header (rendering only). */
#ifndef SHOAL_OCEAN_RLIGHTS_H
#define SHOAL_OCEAN_RLIGHTS_H
#include "raylib.h"

/* clang-format off */
#define MAX_LIGHTS 4
typedef enum { LIGHT_DIRECTIONAL = 0, LIGHT_POINT } LightType;
typedef struct Light {
    int type, enabled;
    Vector3 position, target;
    Color color;
    float attenuation;
    int enabledLoc, typeLoc, positionLoc, targetLoc, colorLoc, attenuationLoc;
} Light;
#define CreateLight(...) SHOAL_RL_VALUE(CreateLight, ((Light){0}))
#define UpdateLightValues(...) SHOAL_RL_STUB(UpdateLightValues)
/* clang-format on */
#endif
