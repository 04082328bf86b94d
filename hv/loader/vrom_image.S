/*
 * vrom_image.S - the VMI ROM (build/vrom/vmi.rom), embedded in the
 * hypervisor image.  The Makefile defines HV_VROM_PATH only when the ROM
 * has been built; without it the image carries no ROM and the guest boots
 * natively (the loader says so).
 */
	.section .rodata
	.balign 16
	.globl vrom_image, vrom_image_end
vrom_image:
#ifdef HV_VROM_PATH
	.incbin HV_VROM_PATH
#endif
vrom_image_end:
