/* Python.h — what an Ocean env that includes <Python.h> gets from shoal: no interpreter, only
 * the keyword/log dict API of shoal_ocean_python.h. */
#ifndef SHOAL_OCEAN_PYTHON_STANDIN_H
#define SHOAL_OCEAN_PYTHON_STANDIN_H
#include "shoal_ocean_python.h"
#endif
