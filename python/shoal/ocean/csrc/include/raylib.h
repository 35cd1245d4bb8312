/* raylib.h — shoal's stand-in for raylib when compiling PufferLib Ocean envs.
 *
 * shoal never renders, so this header declares only what Ocean env code names: the plain
 * value types (with the fields env code reads), colour and key constants, and each drawing,
 * window and loading call as a stub that evaluates to a zero value of its return type and, if it
 * ever runs, fails the env being stepped (see shoal_ocean_runtime.h). Input queries are not
 * failures: without a window there is no keyboard or mouse, so, as in raylib when no input event
 * arrived, no key or button is down and the pointer is at (0, 0) (boids reads the keyboard and the
 * mouse inside c_step for a manual-control mode).
 */
#ifndef SHOAL_OCEAN_RAYLIB_H
#define SHOAL_OCEAN_RAYLIB_H

/* One declaration per line, a table mirroring raylib's API: kept out of clang-format. */
/* clang-format off */
#include <stdbool.h>
#include <stdlib.h>
#include "shoal_ocean_runtime.h"

/* raylib's allocation hooks are plain libc allocation (env code may allocate through them). */
#ifndef RL_MALLOC
#define RL_MALLOC(size) malloc(size)
#define RL_CALLOC(count, size) calloc(count, size)
#define RL_REALLOC(pointer, size) realloc(pointer, size)
#define RL_FREE(pointer) free(pointer)
#endif

#ifndef PI
#define PI 3.14159265358979323846f
#endif
#define DEG2RAD (PI / 180.0f)
#define RAD2DEG (180.0f / PI)

typedef struct Vector2 { float x, y; } Vector2;
typedef struct Vector3 { float x, y, z; } Vector3;
typedef struct Vector4 { float x, y, z, w; } Vector4;
typedef Vector4 Quaternion;
typedef struct Matrix {
    float m0, m4, m8, m12, m1, m5, m9, m13, m2, m6, m10, m14, m3, m7, m11, m15;
} Matrix;
typedef struct Color { unsigned char r, g, b, a; } Color;
typedef struct Rectangle { float x, y, width, height; } Rectangle;
typedef struct Image { void* data; int width, height, mipmaps, format; } Image;
typedef struct Texture { unsigned int id; int width, height, mipmaps, format; } Texture;
typedef Texture Texture2D;
typedef struct RenderTexture { unsigned int id; Texture texture, depth; } RenderTexture;
typedef RenderTexture RenderTexture2D;
typedef struct GlyphInfo { int value, offsetX, offsetY, advanceX; Image image; } GlyphInfo;
typedef struct Font {
    int baseSize, glyphCount, glyphPadding;
    Texture2D texture;
    Rectangle* recs;
    GlyphInfo* glyphs;
} Font;
typedef struct Camera2D { Vector2 offset, target; float rotation, zoom; } Camera2D;
typedef struct Camera3D { Vector3 position, target, up; float fovy; int projection; } Camera3D;
typedef Camera3D Camera;
typedef struct Shader { unsigned int id; int* locs; } Shader;
typedef struct MaterialMap { Texture2D texture; Color color; float value; } MaterialMap;
typedef struct Material { Shader shader; MaterialMap* maps; float params[4]; } Material;
typedef struct Mesh {
    int vertexCount, triangleCount;
    float *vertices, *texcoords, *texcoords2, *normals, *tangents;
    unsigned char* colors;
    unsigned short* indices;
    unsigned int vaoId;
    unsigned int* vboId;
} Mesh;
typedef struct Model {
    Matrix transform;
    int meshCount, materialCount;
    Mesh* meshes;
    Material* materials;
    int* meshMaterial;
} Model;
typedef struct Ray { Vector3 position, direction; } Ray;
typedef struct BoundingBox { Vector3 min, max; } BoundingBox;
typedef struct Sound { void* stream; unsigned int frameCount; } Sound;

#define SHOAL_RL_COLOR(R, G, B, A) ((Color){R, G, B, A})
#define LIGHTGRAY SHOAL_RL_COLOR(200, 200, 200, 255)
#define GRAY SHOAL_RL_COLOR(130, 130, 130, 255)
#define DARKGRAY SHOAL_RL_COLOR(80, 80, 80, 255)
#define YELLOW SHOAL_RL_COLOR(253, 249, 0, 255)
#define GOLD SHOAL_RL_COLOR(255, 203, 0, 255)
#define ORANGE SHOAL_RL_COLOR(255, 161, 0, 255)
#define PINK SHOAL_RL_COLOR(255, 109, 194, 255)
#define RED SHOAL_RL_COLOR(230, 41, 55, 255)
#define MAROON SHOAL_RL_COLOR(190, 33, 55, 255)
#define GREEN SHOAL_RL_COLOR(0, 228, 48, 255)
#define LIME SHOAL_RL_COLOR(0, 158, 47, 255)
#define DARKGREEN SHOAL_RL_COLOR(0, 117, 44, 255)
#define SKYBLUE SHOAL_RL_COLOR(102, 191, 255, 255)
#define BLUE SHOAL_RL_COLOR(0, 121, 241, 255)
#define DARKBLUE SHOAL_RL_COLOR(0, 82, 172, 255)
#define PURPLE SHOAL_RL_COLOR(200, 122, 255, 255)
#define VIOLET SHOAL_RL_COLOR(135, 60, 190, 255)
#define DARKPURPLE SHOAL_RL_COLOR(112, 31, 126, 255)
#define BEIGE SHOAL_RL_COLOR(211, 176, 131, 255)
#define BROWN SHOAL_RL_COLOR(127, 106, 79, 255)
#define DARKBROWN SHOAL_RL_COLOR(76, 63, 47, 255)
#define WHITE SHOAL_RL_COLOR(255, 255, 255, 255)
#define BLACK SHOAL_RL_COLOR(0, 0, 0, 255)
#define BLANK SHOAL_RL_COLOR(0, 0, 0, 0)
#define MAGENTA SHOAL_RL_COLOR(255, 0, 255, 255)
#define RAYWHITE SHOAL_RL_COLOR(245, 245, 245, 255)

/* Constants env code passes to the stubs; their values never matter to shoal. */
enum {
    KEY_NULL = 0, KEY_SPACE = 32, KEY_GRAVE = 96, KEY_MINUS = 45, KEY_EQUAL = 61,
    KEY_ZERO = 48, KEY_ONE, KEY_TWO, KEY_THREE, KEY_FOUR, KEY_FIVE, KEY_SIX, KEY_SEVEN, KEY_EIGHT, KEY_NINE,
    KEY_A = 65, KEY_B, KEY_C, KEY_D, KEY_E, KEY_F, KEY_G, KEY_H, KEY_I, KEY_J, KEY_K, KEY_L, KEY_M,
    KEY_N, KEY_O, KEY_P, KEY_Q, KEY_R, KEY_S, KEY_T, KEY_U, KEY_V, KEY_W, KEY_X, KEY_Y, KEY_Z,
    KEY_ESCAPE = 256, KEY_ENTER, KEY_TAB, KEY_BACKSPACE,
    KEY_RIGHT = 262, KEY_LEFT, KEY_DOWN, KEY_UP,
    KEY_LEFT_SHIFT = 340, KEY_LEFT_CONTROL, KEY_RIGHT_SHIFT = 344,
    MOUSE_BUTTON_LEFT = 0, MOUSE_BUTTON_RIGHT = 1, MOUSE_BUTTON_MIDDLE = 2,
    FLAG_MSAA_4X_HINT = 0x20, FLAG_WINDOW_RESIZABLE = 0x4,
    LOG_INFO = 3, LOG_WARNING = 4, LOG_ERROR = 5,
    BLEND_ALPHA = 0, BLEND_ADDITIVE = 1,
    CAMERA_PERSPECTIVE = 0, CAMERA_ORTHOGRAPHIC = 1,
    CAMERA_CUSTOM = 0, CAMERA_FREE, CAMERA_ORBITAL, CAMERA_FIRST_PERSON, CAMERA_THIRD_PERSON,
    MATERIAL_MAP_DIFFUSE = 0, MATERIAL_MAP_ALBEDO = 0,
    SHADER_UNIFORM_FLOAT = 0, SHADER_UNIFORM_VEC2, SHADER_UNIFORM_VEC3, SHADER_UNIFORM_VEC4,
    SHADER_UNIFORM_INT,
    PIXELFORMAT_UNCOMPRESSED_GRAYSCALE = 1, PIXELFORMAT_UNCOMPRESSED_R8G8B8A8 = 7,
};

/* A stub call: fails the current env if it ever runs, and has the value of a zero RESULT. */
#define SHOAL_RL_STUB(NAME) shoal_ocean_stub_called(#NAME)
#define SHOAL_RL_VALUE(NAME, RESULT) (shoal_ocean_stub_called(#NAME), (RESULT))

/* Window, frame and drawing modes. */
#define InitWindow(...) SHOAL_RL_STUB(InitWindow)
#define CloseWindow(...) SHOAL_RL_STUB(CloseWindow)
#define WindowShouldClose(...) SHOAL_RL_VALUE(WindowShouldClose, true)
#define IsWindowReady(...) SHOAL_RL_VALUE(IsWindowReady, false)
#define SetConfigFlags(...) SHOAL_RL_STUB(SetConfigFlags)
#define SetTargetFPS(...) SHOAL_RL_STUB(SetTargetFPS)
#define SetWindowSize(...) SHOAL_RL_STUB(SetWindowSize)
#define SetWindowTitle(...) SHOAL_RL_STUB(SetWindowTitle)
#define ToggleFullscreen(...) SHOAL_RL_STUB(ToggleFullscreen)
#define ToggleBorderlessWindowed(...) SHOAL_RL_STUB(ToggleBorderlessWindowed)
#define GetRenderWidth(...) SHOAL_RL_VALUE(GetRenderWidth, 0)
#define GetRenderHeight(...) SHOAL_RL_VALUE(GetRenderHeight, 0)
#define GetScreenWidth(...) SHOAL_RL_VALUE(GetScreenWidth, 0)
#define GetScreenHeight(...) SHOAL_RL_VALUE(GetScreenHeight, 0)
#define GetFPS(...) SHOAL_RL_VALUE(GetFPS, 0)
#define GetFrameTime(...) SHOAL_RL_VALUE(GetFrameTime, 0.0f)
/* The clock of a window never opened: raylib's GetTime() counts from InitWindow, and GLFW's clock
 * reads 0 before glfwInit. tower_climb's c_step stamps its render effects with it. */
#define GetTime(...) SHOAL_RL_NO_INPUT(0.0)
#define BeginDrawing(...) SHOAL_RL_STUB(BeginDrawing)
#define EndDrawing(...) SHOAL_RL_STUB(EndDrawing)
#define ClearBackground(...) SHOAL_RL_STUB(ClearBackground)
#define BeginMode2D(...) SHOAL_RL_STUB(BeginMode2D)
#define EndMode2D(...) SHOAL_RL_STUB(EndMode2D)
#define BeginMode3D(...) SHOAL_RL_STUB(BeginMode3D)
#define EndMode3D(...) SHOAL_RL_STUB(EndMode3D)
#define BeginTextureMode(...) SHOAL_RL_STUB(BeginTextureMode)
#define EndTextureMode(...) SHOAL_RL_STUB(EndTextureMode)
#define BeginShaderMode(...) SHOAL_RL_STUB(BeginShaderMode)
#define EndShaderMode(...) SHOAL_RL_STUB(EndShaderMode)
#define BeginBlendMode(...) SHOAL_RL_STUB(BeginBlendMode)
#define EndBlendMode(...) SHOAL_RL_STUB(EndBlendMode)
#define BeginScissorMode(...) SHOAL_RL_STUB(BeginScissorMode)
#define EndScissorMode(...) SHOAL_RL_STUB(EndScissorMode)
#define TraceLog(...) SHOAL_RL_STUB(TraceLog)
#define TextFormat(...) SHOAL_RL_VALUE(TextFormat, "")

/* Input: nothing pressed, the pointer at (0, 0) (see the top of this file). The arguments are
 * not evaluated, as with the stubs. */
#define SHOAL_RL_NO_INPUT(RESULT) (RESULT)
#define IsKeyDown(...) SHOAL_RL_NO_INPUT(false)
#define IsKeyPressed(...) SHOAL_RL_NO_INPUT(false)
#define IsKeyReleased(...) SHOAL_RL_NO_INPUT(false)
#define GetKeyPressed(...) SHOAL_RL_NO_INPUT(0)
#define GetCharPressed(...) SHOAL_RL_NO_INPUT(0)
#define IsMouseButtonDown(...) SHOAL_RL_NO_INPUT(false)
#define IsMouseButtonPressed(...) SHOAL_RL_NO_INPUT(false)
#define IsMouseButtonReleased(...) SHOAL_RL_NO_INPUT(false)
#define GetMousePosition(...) SHOAL_RL_NO_INPUT(((Vector2){0, 0}))
#define GetMouseX(...) SHOAL_RL_NO_INPUT(0)
#define GetMouseY(...) SHOAL_RL_NO_INPUT(0)
#define GetMouseWheelMove(...) SHOAL_RL_NO_INPUT(0.0f)

/* Shapes, text and textures. */
#define DrawPixel(...) SHOAL_RL_STUB(DrawPixel)
#define DrawLine(...) SHOAL_RL_STUB(DrawLine)
#define DrawLineV(...) SHOAL_RL_STUB(DrawLineV)
#define DrawLineEx(...) SHOAL_RL_STUB(DrawLineEx)
#define DrawCircle(...) SHOAL_RL_STUB(DrawCircle)
#define DrawCircleV(...) SHOAL_RL_STUB(DrawCircleV)
#define DrawCircleLines(...) SHOAL_RL_STUB(DrawCircleLines)
#define DrawCircleGradient(...) SHOAL_RL_STUB(DrawCircleGradient)
#define DrawRectangle(...) SHOAL_RL_STUB(DrawRectangle)
#define DrawRectangleV(...) SHOAL_RL_STUB(DrawRectangleV)
#define DrawRectangleRec(...) SHOAL_RL_STUB(DrawRectangleRec)
#define DrawRectangleLines(...) SHOAL_RL_STUB(DrawRectangleLines)
#define DrawRectangleLinesEx(...) SHOAL_RL_STUB(DrawRectangleLinesEx)
#define DrawTriangle(...) SHOAL_RL_STUB(DrawTriangle)
#define DrawText(...) SHOAL_RL_STUB(DrawText)
#define DrawTextEx(...) SHOAL_RL_STUB(DrawTextEx)
#define DrawFPS(...) SHOAL_RL_STUB(DrawFPS)
#define MeasureText(...) SHOAL_RL_VALUE(MeasureText, 0)
#define DrawTexture(...) SHOAL_RL_STUB(DrawTexture)
#define DrawTextureV(...) SHOAL_RL_STUB(DrawTextureV)
#define DrawTextureEx(...) SHOAL_RL_STUB(DrawTextureEx)
#define DrawTextureRec(...) SHOAL_RL_STUB(DrawTextureRec)
#define DrawTexturePro(...) SHOAL_RL_STUB(DrawTexturePro)
#define ColorAlpha(...) SHOAL_RL_VALUE(ColorAlpha, BLANK)
#define Fade(...) SHOAL_RL_VALUE(Fade, BLANK)

/* 3D. */
#define DrawLine3D(...) SHOAL_RL_STUB(DrawLine3D)
#define DrawCube(...) SHOAL_RL_STUB(DrawCube)
#define DrawCubeV(...) SHOAL_RL_STUB(DrawCubeV)
#define DrawCubeWires(...) SHOAL_RL_STUB(DrawCubeWires)
#define DrawSphere(...) SHOAL_RL_STUB(DrawSphere)
#define DrawCylinderEx(...) SHOAL_RL_STUB(DrawCylinderEx)
#define DrawPlane(...) SHOAL_RL_STUB(DrawPlane)
#define DrawGrid(...) SHOAL_RL_STUB(DrawGrid)
#define DrawModel(...) SHOAL_RL_STUB(DrawModel)
#define DrawModelEx(...) SHOAL_RL_STUB(DrawModelEx)
#define UpdateCamera(...) SHOAL_RL_STUB(UpdateCamera)

/* Loading and GPU resources. */
#define LoadImage(...) SHOAL_RL_VALUE(LoadImage, ((Image){0}))
#define UnloadImage(...) SHOAL_RL_STUB(UnloadImage)
#define GenImageColor(...) SHOAL_RL_VALUE(GenImageColor, ((Image){0}))
#define GenImageChecked(...) SHOAL_RL_VALUE(GenImageChecked, ((Image){0}))
#define ImageFormat(...) SHOAL_RL_STUB(ImageFormat)
#define LoadTexture(...) SHOAL_RL_VALUE(LoadTexture, ((Texture2D){0}))
#define LoadTextureFromImage(...) SHOAL_RL_VALUE(LoadTextureFromImage, ((Texture2D){0}))
#define UpdateTexture(...) SHOAL_RL_STUB(UpdateTexture)
#define UnloadTexture(...) SHOAL_RL_STUB(UnloadTexture)
#define LoadRenderTexture(...) SHOAL_RL_VALUE(LoadRenderTexture, ((RenderTexture2D){0}))
#define UnloadRenderTexture(...) SHOAL_RL_STUB(UnloadRenderTexture)
#define LoadFont(...) SHOAL_RL_VALUE(LoadFont, ((Font){0}))
#define LoadFontEx(...) SHOAL_RL_VALUE(LoadFontEx, ((Font){0}))
#define UnloadFont(...) SHOAL_RL_STUB(UnloadFont)
#define LoadShader(...) SHOAL_RL_VALUE(LoadShader, ((Shader){0}))
#define UnloadShader(...) SHOAL_RL_STUB(UnloadShader)
#define GetShaderLocation(...) SHOAL_RL_VALUE(GetShaderLocation, 0)
#define SetShaderValue(...) SHOAL_RL_STUB(SetShaderValue)
#define SetShaderValueTexture(...) SHOAL_RL_STUB(SetShaderValueTexture)
#define LoadModel(...) SHOAL_RL_VALUE(LoadModel, ((Model){0}))
#define LoadModelFromMesh(...) SHOAL_RL_VALUE(LoadModelFromMesh, ((Model){0}))
#define UnloadModel(...) SHOAL_RL_STUB(UnloadModel)
#define GenMeshCube(...) SHOAL_RL_VALUE(GenMeshCube, ((Mesh){0}))
#define UploadMesh(...) SHOAL_RL_STUB(UploadMesh)
#define UpdateMeshBuffer(...) SHOAL_RL_STUB(UpdateMeshBuffer)
#define PlaySound(...) SHOAL_RL_STUB(PlaySound)
#define LoadSound(...) SHOAL_RL_VALUE(LoadSound, ((Sound){0}))

/* Skeletal animation and the rest of tower_climb's renderer. */
typedef struct BoneInfo { char name[32]; int parent; } BoneInfo;
typedef struct Transform { Vector3 translation; Vector4 rotation; Vector3 scale; } Transform;
typedef struct ModelAnimation {
    int boneCount, frameCount;
    BoneInfo* bones;
    Transform** framePoses;
    char name[32];
} ModelAnimation;
enum { SHOAL_RL_SHADER_LOC_VECTOR_VIEW = 11 };
#define SHADER_LOC_VECTOR_VIEW SHOAL_RL_SHADER_LOC_VECTOR_VIEW
#define LoadModelAnimations(...) SHOAL_RL_VALUE(LoadModelAnimations, ((ModelAnimation*)0))
#define UpdateModelAnimation(...) SHOAL_RL_STUB(UpdateModelAnimation)
#define UnloadModelAnimations(...) SHOAL_RL_STUB(UnloadModelAnimations)
#define GetModelBoundingBox(...) SHOAL_RL_VALUE(GetModelBoundingBox, ((BoundingBox){0}))
#define DrawCylinder(...) SHOAL_RL_STUB(DrawCylinder)

/* clang-format on */
#endif /* SHOAL_OCEAN_RAYLIB_H */
