/* rlgl.h — shoal's stand-in for raylib's low-level GL layer: every call is a stub (see raylib.h). */
#ifndef SHOAL_OCEAN_RLGL_H
#define SHOAL_OCEAN_RLGL_H

#include "raylib.h"

#define rlPushMatrix(...) SHOAL_RL_STUB(rlPushMatrix)
#define rlPopMatrix(...) SHOAL_RL_STUB(rlPopMatrix)
#define rlTranslatef(...) SHOAL_RL_STUB(rlTranslatef)
#define rlRotatef(...) SHOAL_RL_STUB(rlRotatef)
#define rlScalef(...) SHOAL_RL_STUB(rlScalef)
#define rlEnableDepthTest(...) SHOAL_RL_STUB(rlEnableDepthTest)
#define rlDisableDepthTest(...) SHOAL_RL_STUB(rlDisableDepthTest)
#define rlSetBlendFactorsSeparate(...) SHOAL_RL_STUB(rlSetBlendFactorsSeparate)

#endif /* SHOAL_OCEAN_RLGL_H */
