# cli/view.mk - `memflow view`: the command, its request parser, its data
# answers and its libmicrohttpd server (cli/), and the page (view/), compiled
# into the program by view/embed.sh.
memflow_SOURCES += cli/cmd_view.c cli/view_request.c cli/view_request.h \
	cli/view_api.c cli/view_api.h cli/view_raster.c cli/view_raster.h cli/view_server.c \
	cli/view_server.h
nodist_memflow_SOURCES = cli/view_assets.c
memflow_CPPFLAGS = $(AM_CPPFLAGS) $(MHD_CFLAGS)
memflow_LDADD += $(MHD_LIBS)
VIEW_ASSETS = view/index.html view/view.css view/view.js
cli/view_assets.c: $(VIEW_ASSETS) view/embed.sh
	@$(MKDIR_P) cli
	$(AM_V_GEN)$(SHELL) $(srcdir)/view/embed.sh $@ $(srcdir)/view/index.html \
	  $(srcdir)/view/view.css $(srcdir)/view/view.js
BUILT_SOURCES += cli/view_assets.c
CLEANFILES += cli/view_assets.c
EXTRA_DIST += $(VIEW_ASSETS) view/embed.sh
