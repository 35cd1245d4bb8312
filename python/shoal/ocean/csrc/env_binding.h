/* env_binding.h — shoal's side of PufferLib's Ocean binding contract.
 *
 * An Ocean binding.c defines `Env` as its env type and includes "../env_binding.h" after the
 * env's header. shoal stages the env's folder unmodified beside this file, so that include
 * resolves here. What the contract gives the binding is the same as PufferLib's: the keyword
 * reader unpack(), the log writer assign_to_dict() and the declarations of the binding's own
 * my_init() and my_log(). Everything else (buffers, seeding, stepping, logs) is shoal's
 * adapter (shoal_ocean_adapter.c), which includes the binding and calls c_reset/c_step/c_close.
 */
#ifndef SHOAL_OCEAN_ENV_BINDING_H
#define SHOAL_OCEAN_ENV_BINDING_H

#include "shoal_ocean_python.h"

#if defined(MY_SHARED) || defined(MY_GET) || defined(MY_PUT) || defined(MY_METHODS)
#error \
    "shoal.ocean: this binding extends PufferLib's contract (MY_SHARED/MY_GET/MY_PUT/MY_METHODS: state shared between envs or extra Python methods); shoal runs envs that own their state"
#endif

static int my_init(Env* env, PyObject* args, PyObject* kwargs);
static int my_log(PyObject* dict, Log* log);

#endif /* SHOAL_OCEAN_ENV_BINDING_H */
