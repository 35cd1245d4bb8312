/* env_binding.h — shoal's side of PufferLib's Ocean binding contract.
 *
 * An Ocean binding.c defines `Env` as its env type and includes "../env_binding.h" after the
 * env's header. shoal stages the env's folder unmodified beside this file, so that include
 * resolves here. What the contract gives the binding is the same as PufferLib's: the keyword
 * reader unpack(), the log writer assign_to_dict() and the declarations of the binding's own
 * my_init(), my_log() and my_shared(). Everything else (buffers, seeding, stepping, logs) is shoal's
 * adapter (shoal_ocean_adapter.c), which includes the binding and calls c_reset/c_step/c_close.
 */
#ifndef SHOAL_OCEAN_ENV_BINDING_H
#define SHOAL_OCEAN_ENV_BINDING_H

#include "shoal_ocean_python.h"

/* MY_GET / MY_PUT / MY_METHODS: per-env state read and written from Python, and the env's own
 * methods called from Python, between steps. shoal steps envs without an interpreter and does not
 * call into them from Python yet. */
#if defined(MY_GET) || defined(MY_PUT) || defined(MY_METHODS)
#error \
    "shoal.ocean: this binding extends PufferLib's contract with MY_GET/MY_PUT/MY_METHODS (env state or methods called from Python), which shoal does not support"
#endif

/* MY_SHARED: my_shared() builds state once per vector, which every env's my_init receives as the
 * handle the Python class passes (shoal_ocean_shared.h runs it in the spec's configure). */
#ifdef MY_SHARED
static PyObject* my_shared(PyObject* self, PyObject* args, PyObject* kwargs);
#endif

static int my_init(Env* env, PyObject* args, PyObject* kwargs);
static int my_log(PyObject* dict, Log* log);

#endif /* SHOAL_OCEAN_ENV_BINDING_H */
