/* cpp/envs/bundled_envs.h — the specs of the envs compiled into shoal (one per cpp/envs/<name>/). */
#ifndef SHOAL_BUNDLED_ENVS_H
#define SHOAL_BUNDLED_ENVS_H

#include "shoal/env.h"

#ifdef __cplusplus
extern "C" {
#endif

const shoal_env_spec* shoal_env_spec_cartpole(void);
const shoal_env_spec* shoal_env_spec_squared(void);
const shoal_env_spec* shoal_env_spec_grid(void);
const shoal_env_spec* shoal_env_spec_deep(void);

#ifdef __cplusplus
}
#endif

#endif /* SHOAL_BUNDLED_ENVS_H */
