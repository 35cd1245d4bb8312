/* Intentionally empty translation unit: keeps the shoal_envs object library non-empty. */
typedef int shoal_envs_registry_placeholder;
